# expect: ok
def newton_sqrt(x, eps=1e-12):
    if x == 0:
        return 0.0
    g = x
    while abs(g * g - x) > eps * x:
        g = (g + x / g) / 2
    return g

import math
for v in (2.0, 10.0, 1e-6, 12345.678):
    assert math.isclose(newton_sqrt(v), math.sqrt(v), rel_tol=1e-9)
