# expect: ok
def isomorphic(a, b):
    return len(set(a)) == len(set(b)) == len(set(zip(a, b))) and len(a) == len(b)

assert isomorphic("egg", "add")
assert not isomorphic("foo", "bar")
assert isomorphic("paper", "title")
