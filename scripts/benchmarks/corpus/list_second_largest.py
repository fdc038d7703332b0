# expect: ok
def second_largest(xs):
    uniq = sorted(set(xs))
    return uniq[-2] if len(uniq) > 1 else None

assert second_largest([3, 1, 4, 1, 5, 9, 2, 6]) == 6
assert second_largest([7, 7]) is None
assert second_largest([-1, -2]) == -2
