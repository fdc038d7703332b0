# expect: ok
import statistics

def describe(xs):
    return statistics.mean(xs), statistics.median(xs), statistics.mode(xs)

assert describe([1, 2, 2, 3, 4]) == (2.4, 2, 2)
assert describe([5, 1, 3, 3]) == (3, 3.0, 3)
