# expect: ok
import math

def simpson(f, a, b, n=100):
    h = (b - a) / n
    s = f(a) + f(b)
    s += 4 * sum(f(a + i * h) for i in range(1, n, 2))
    s += 2 * sum(f(a + i * h) for i in range(2, n, 2))
    return s * h / 3

assert math.isclose(simpson(math.sin, 0, math.pi), 2.0, rel_tol=1e-7)
assert math.isclose(simpson(lambda x: x ** 3, 0, 2), 4.0)
