# expect: ok
class Vec:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __add__(self, o):
        return Vec(self.x + o.x, self.y + o.y)

    def __mul__(self, k):
        return Vec(self.x * k, self.y * k)

    def __eq__(self, o):
        return (self.x, self.y) == (o.x, o.y)

    def __abs__(self):
        return (self.x ** 2 + self.y ** 2) ** 0.5

assert Vec(1, 2) + Vec(3, 4) == Vec(4, 6)
assert Vec(1, 1) * 3 == Vec(3, 3)
assert abs(Vec(3, 4)) == 5
