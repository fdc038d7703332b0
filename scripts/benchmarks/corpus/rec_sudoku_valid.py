# expect: ok
def valid_sudoku(board):
    def ok(cells):
        digits = [c for c in cells if c != "."]
        return len(digits) == len(set(digits))
    rows = all(ok(r) for r in board)
    cols = all(ok(c) for c in zip(*board))
    boxes = all(ok([board[r][c] for r in range(br, br + 3) for c in range(bc, bc + 3)])
                for br in (0, 3, 6) for bc in (0, 3, 6))
    return rows and cols and boxes

b = ["53..7....", "6..195...", ".98....6.", "8...6...3", "4..8.3..1", "7...2...6", ".6....28.", "...419..5", "....8..79"]
assert valid_sudoku([list(r) for r in b])
b2 = [list(r) for r in b]
b2[0][0] = "8"
assert not valid_sudoku(b2)
