# expect: ok
def snake_to_camel(name):
    head, *rest = name.split("_")
    return head + "".join(p.capitalize() for p in rest)

assert snake_to_camel("snake_case_name") == "snakeCaseName"
assert snake_to_camel("single") == "single"
assert snake_to_camel("a_b_c") == "aBC"
