# expect: ok
from collections import namedtuple
import math

Point = namedtuple("Point", "x y")

def distance(p, q):
    return math.hypot(p.x - q.x, p.y - q.y)

assert distance(Point(0, 0), Point(3, 4)) == 5.0
assert Point(1, 2)._replace(y=5) == (1, 5)
