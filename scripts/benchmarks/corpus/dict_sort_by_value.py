# expect: ok
def sort_by_value(d):
    return [k for k, _ in sorted(d.items(), key=lambda kv: (kv[1], kv[0]))]

assert sort_by_value({"x": 3, "y": 1, "z": 2}) == ["y", "z", "x"]
assert sort_by_value({"b": 1, "a": 1}) == ["a", "b"]
