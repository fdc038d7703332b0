# expect: ok
def binom(n, k):
    if k < 0 or k > n:
        return 0
    k = min(k, n - k)
    out = 1
    for i in range(k):
        out = out * (n - i) // (i + 1)
    return out

from math import comb
assert all(binom(n, k) == comb(n, k) for n in range(20) for k in range(n + 1))
assert binom(5, 7) == 0
