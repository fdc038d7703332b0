# expect: ok
def matmul(a, b):
    return [[sum(x * y for x, y in zip(row, col)) for col in zip(*b)] for row in a]

assert matmul([[1, 2], [3, 4]], [[5, 6], [7, 8]]) == [[19, 22], [43, 50]]
ident = [[1, 0], [0, 1]]
assert matmul([[2, 3], [4, 5]], ident) == [[2, 3], [4, 5]]
