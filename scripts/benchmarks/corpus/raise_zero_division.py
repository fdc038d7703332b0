# expect: ZeroDivisionError
def mean(xs):
    return sum(xs) / len(xs)

assert mean([2, 4]) == 3
assert mean([]) == 0
