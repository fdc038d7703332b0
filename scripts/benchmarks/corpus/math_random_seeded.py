# expect: ok
import random

def shuffled(xs, seed):
    r = random.Random(seed)
    xs = list(xs)
    r.shuffle(xs)
    return xs

assert shuffled(range(10), 42) == shuffled(range(10), 42)
assert sorted(shuffled(range(10), 7)) == list(range(10))
