# expect: ok
def rotate(xs, k):
    if not xs:
        return xs
    k %= len(xs)
    return xs[-k:] + xs[:-k] if k else xs[:]

assert rotate([1, 2, 3, 4, 5], 2) == [4, 5, 1, 2, 3]
assert rotate([1, 2, 3], 3) == [1, 2, 3]
assert rotate([], 4) == []
assert rotate([1, 2, 3], -1) == [2, 3, 1]
