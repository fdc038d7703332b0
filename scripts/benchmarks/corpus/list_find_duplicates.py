# expect: ok
def duplicates(xs):
    seen, dup = set(), set()
    for x in xs:
        (dup if x in seen else seen).add(x)
    return sorted(dup)

assert duplicates([4, 3, 2, 7, 8, 2, 3, 1]) == [2, 3]
assert duplicates([1, 2, 3]) == []
