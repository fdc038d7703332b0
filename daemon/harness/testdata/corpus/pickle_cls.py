import pickle
class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y
    def __repr__(self):
        return f"Point({self.x}, {self.y})"
p = pickle.loads(pickle.dumps(Point(1, 2)))
print(p, type(p).__module__, type(p).__qualname__)
