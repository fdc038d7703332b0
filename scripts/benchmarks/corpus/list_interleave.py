# expect: ok
from itertools import chain, zip_longest

def interleave(*lists):
    sentinel = object()
    return [x for x in chain.from_iterable(zip_longest(*lists, fillvalue=sentinel)) if x is not sentinel]

assert interleave([1, 2, 3], "ab", [None]) == [1, "a", None, 2, "b", 3]
assert interleave() == []
