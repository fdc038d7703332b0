# expect: ok
def cummax(xs):
    out, m = [], float("-inf")
    for x in xs:
        m = max(m, x)
        out.append(m)
    return out

assert cummax([1, 3, 2, 5, 4]) == [1, 3, 3, 5, 5]
assert cummax([]) == []
