# expect: ok
def to_dict(keys, values):
    return dict(zip(keys, values))

assert to_dict("abc", [1, 2, 3]) == {"a": 1, "b": 2, "c": 3}
assert to_dict([], []) == {}
