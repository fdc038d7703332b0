# expect: ok
class Countdown:
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return self

    def __next__(self):
        if self.n <= 0:
            raise StopIteration
        self.n -= 1
        return self.n + 1

assert list(Countdown(4)) == [4, 3, 2, 1]
assert list(Countdown(0)) == []
