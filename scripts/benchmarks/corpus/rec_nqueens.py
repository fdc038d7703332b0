# expect: ok
def n_queens(n):
    count = 0
    def place(row, cols, d1, d2):
        nonlocal count
        if row == n:
            count += 1
            return
        for c in range(n):
            if c not in cols and row - c not in d1 and row + c not in d2:
                place(row + 1, cols | {c}, d1 | {row - c}, d2 | {row + c})
    place(0, frozenset(), frozenset(), frozenset())
    return count

assert [n_queens(n) for n in range(1, 8)] == [1, 0, 0, 2, 10, 4, 40]
