# expect: ok
def is_rotation(a, b):
    return len(a) == len(b) and b in a + a

assert is_rotation("waterbottle", "erbottlewat")
assert not is_rotation("abc", "acb")
assert is_rotation("", "")
