# expect: ok
def step(board):
    rows, cols = len(board), len(board[0])
    def live(r, c):
        return sum(board[i][j] for i in range(r - 1, r + 2) for j in range(c - 1, c + 2)
                   if (i, j) != (r, c) and 0 <= i < rows and 0 <= j < cols)
    return [[1 if (board[r][c] and live(r, c) in (2, 3)) or (not board[r][c] and live(r, c) == 3) else 0
             for c in range(cols)] for r in range(rows)]

blinker = [[0, 0, 0], [1, 1, 1], [0, 0, 0]]
assert step(blinker) == [[0, 1, 0], [0, 1, 0], [0, 1, 0]]
assert step(step(blinker)) == blinker
