# expect: ok
import cmath

def quadratic_roots(a, b, c):
    d = cmath.sqrt(b * b - 4 * a * c)
    return (-b + d) / (2 * a), (-b - d) / (2 * a)

r1, r2 = quadratic_roots(1, -3, 2)
assert {r1.real, r2.real} == {1.0, 2.0}
r1, r2 = quadratic_roots(1, 0, 1)
assert {r1, r2} == {1j, -1j}
