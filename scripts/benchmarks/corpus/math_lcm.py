# expect: ok
from math import gcd

def lcm_all(xs):
    out = 1
    for x in xs:
        out = out * x // gcd(out, x)
    return out

assert lcm_all([4, 6]) == 12
assert lcm_all(range(1, 11)) == 2520
