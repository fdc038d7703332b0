# expect: ok
def subsets(xs):
    if not xs:
        return [[]]
    rest = subsets(xs[1:])
    return rest + [[xs[0]] + s for s in rest]

s = subsets([1, 2, 3])
assert len(s) == 8
assert sorted(map(sorted, s)) == [[], [1], [1, 2], [1, 2, 3], [1, 3], [2], [2, 3], [3]]
