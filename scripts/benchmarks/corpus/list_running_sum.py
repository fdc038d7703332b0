# expect: ok
from itertools import accumulate

def running_sum(xs):
    return list(accumulate(xs))

assert running_sum([1, 2, 3, 4]) == [1, 3, 6, 10]
assert running_sum([]) == []
