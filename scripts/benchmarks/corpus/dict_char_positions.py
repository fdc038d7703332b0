# expect: ok
def positions(s):
    out = {}
    for i, c in enumerate(s):
        out.setdefault(c, []).append(i)
    return out

p = positions("banana")
assert p == {"b": [0], "a": [1, 3, 5], "n": [2, 4]}
