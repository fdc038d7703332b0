# expect: ok
def transpose(m):
    return [list(r) for r in zip(*m)]

assert transpose([[1, 2, 3], [4, 5, 6]]) == [[1, 4], [2, 5], [3, 6]]
assert transpose([[1]]) == [[1]]
