# expect: ok
def factorial(n):
    if n < 0:
        raise ValueError("negative")
    out = 1
    for i in range(2, n + 1):
        out *= i
    return out

import math
assert factorial(0) == 1
assert factorial(20) == math.factorial(20)
