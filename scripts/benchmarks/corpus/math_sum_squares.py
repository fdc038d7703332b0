# expect: ok
def sum_square_difference(n):
    return sum(range(1, n + 1)) ** 2 - sum(i * i for i in range(1, n + 1))

assert sum_square_difference(10) == 2640
assert sum_square_difference(100) == 25164150
