# expect: ok
from collections import Counter

def common_counts(a, b):
    return dict(Counter(a) & Counter(b))

assert common_counts("aabbc", "abbbd") == {"a": 1, "b": 2}
assert common_counts([], [1]) == {}
