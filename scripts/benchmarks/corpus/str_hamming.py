# expect: ok
def hamming(a, b):
    if len(a) != len(b):
        raise ValueError("lengths differ")
    return sum(x != y for x, y in zip(a, b))

assert hamming("karolin", "kathrin") == 3
assert hamming("", "") == 0
try:
    hamming("a", "ab")
    assert False
except ValueError:
    pass
