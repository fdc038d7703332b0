# expect: ok
from itertools import combinations

def triplets_zero(xs):
    return sorted({tuple(sorted(c)) for c in combinations(xs, 3) if sum(c) == 0})

assert triplets_zero([-1, 0, 1, 2, -1, -4]) == [(-1, -1, 2), (-1, 0, 1)]
