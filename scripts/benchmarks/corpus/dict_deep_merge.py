# expect: ok
def deep_merge(a, b):
    out = dict(a)
    for k, v in b.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = v
    return out

a = {"x": 1, "y": {"p": 1, "q": {"r": 1}}}
b = {"y": {"q": {"s": 2}, "t": 3}, "z": 4}
assert deep_merge(a, b) == {"x": 1, "y": {"p": 1, "q": {"r": 1, "s": 2}, "t": 3}, "z": 4}
assert a["y"]["q"] == {"r": 1}
