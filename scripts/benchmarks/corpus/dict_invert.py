# expect: ok
def invert(d):
    out = {}
    for k, v in d.items():
        out.setdefault(v, []).append(k)
    return out

assert invert({"a": 1, "b": 2, "c": 1}) == {1: ["a", "c"], 2: ["b"]}
assert invert({}) == {}
