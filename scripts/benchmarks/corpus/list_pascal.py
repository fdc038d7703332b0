# expect: ok
def pascal_row(n):
    row = [1]
    for _ in range(n):
        row = [a + b for a, b in zip([0] + row, row + [0])]
    return row

assert pascal_row(0) == [1]
assert pascal_row(4) == [1, 4, 6, 4, 1]
assert sum(pascal_row(10)) == 1024
