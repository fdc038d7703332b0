# expect: ok
from fractions import Fraction

def harmonic(n):
    return sum(Fraction(1, k) for k in range(1, n + 1))

assert harmonic(4) == Fraction(25, 12)
assert harmonic(10).denominator == 2520
