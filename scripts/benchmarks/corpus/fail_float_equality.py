# expect: AssertionError
def average(xs):
    return sum(xs) / len(xs)

assert average([1, 2, 3]) == 2
assert average([0.1, 0.2]) == 0.15
