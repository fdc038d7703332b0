# expect: ok
def depth(tree):
    if tree is None:
        return 0
    value, left, right = tree
    return 1 + max(depth(left), depth(right))

t = (1, (2, (4, None, None), None), (3, None, (5, (6, None, None), None)))
assert depth(t) == 4
assert depth(None) == 0
