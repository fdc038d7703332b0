# expect: AssertionError
def dedupe(xs):
    return list(set(xs))  # loses the order

assert sorted(dedupe([3, 3, 1])) == [1, 3]
assert dedupe([3, 1, 2, 3]) == [3, 1, 2]
