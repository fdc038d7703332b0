# expect: ok
def isqrt(n):
    if n < 2:
        return n
    x = n
    y = (x + 1) // 2
    while y < x:
        x = y
        y = (x + n // x) // 2
    return x

import math
assert all(isqrt(n) == math.isqrt(n) for n in range(2000))
assert isqrt(10 ** 30) == 10 ** 15
