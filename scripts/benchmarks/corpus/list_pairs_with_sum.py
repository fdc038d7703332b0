# expect: ok
def pairs_with_sum(xs, target):
    seen, out = set(), set()
    for x in xs:
        if target - x in seen:
            out.add((min(x, target - x), max(x, target - x)))
        seen.add(x)
    return sorted(out)

assert pairs_with_sum([1, 5, 7, -1, 5], 6) == [(-1, 7), (1, 5)]
assert pairs_with_sum([], 3) == []
