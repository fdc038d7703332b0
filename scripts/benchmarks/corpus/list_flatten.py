# expect: ok
def flatten(xs):
    out = []
    for x in xs:
        if isinstance(x, list):
            out.extend(flatten(x))
        else:
            out.append(x)
    return out

assert flatten([1, [2, [3, [4]], 5], []]) == [1, 2, 3, 4, 5]
assert flatten([]) == []
