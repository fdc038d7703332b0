# expect: ok
def intersection(a, b):
    sb = set(b)
    out = []
    for x in a:
        if x in sb and x not in out:
            out.append(x)
    return out

assert intersection([1, 2, 2, 1], [2, 2]) == [2]
assert intersection([4, 9, 5], [9, 4, 9, 8, 4]) == [4, 9]
