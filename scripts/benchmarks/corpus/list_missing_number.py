# expect: ok
def missing(xs):
    n = len(xs)
    return n * (n + 1) // 2 - sum(xs)

assert missing([3, 0, 1]) == 2
assert missing([9, 6, 4, 2, 3, 5, 7, 0, 1]) == 8
assert missing([0]) == 1
