# expect: AttributeError
class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

p = Point(1, 2)
assert p.x + p.y == 3
assert p.z == 0
