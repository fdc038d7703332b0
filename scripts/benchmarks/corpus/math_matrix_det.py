# expect: ok
def det(m):
    if len(m) == 1:
        return m[0][0]
    return sum((-1) ** j * m[0][j] * det([row[:j] + row[j + 1:] for row in m[1:]]) for j in range(len(m)))

assert det([[1, 2], [3, 4]]) == -2
assert det([[6, 1, 1], [4, -2, 5], [2, 8, 7]]) == -306
assert det([[2, 0, 0, 0], [0, 3, 0, 0], [0, 0, 4, 0], [0, 0, 0, 5]]) == 120
