# expect: ok
def safe_div(a, b):
    try:
        return a / b
    except ZeroDivisionError:
        return float("inf")
    except TypeError as e:
        return str(e).split()[0]

assert safe_div(6, 3) == 2
assert safe_div(1, 0) == float("inf")
assert safe_div("a", 1) == "unsupported"
