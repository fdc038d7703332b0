# expect: ok
def camel_to_snake(name):
    out = []
    for i, c in enumerate(name):
        if c.isupper() and i > 0:
            out.append("_")
        out.append(c.lower())
    return "".join(out)

assert camel_to_snake("camelCaseName") == "camel_case_name"
assert camel_to_snake("HTTPServer") == "h_t_t_p_server"
assert camel_to_snake("x") == "x"
