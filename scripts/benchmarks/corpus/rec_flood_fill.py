# expect: ok
def flood(grid, r, c, new):
    old = grid[r][c]
    if old == new:
        return grid
    def fill(i, j):
        if 0 <= i < len(grid) and 0 <= j < len(grid[0]) and grid[i][j] == old:
            grid[i][j] = new
            fill(i + 1, j); fill(i - 1, j); fill(i, j + 1); fill(i, j - 1)
    fill(r, c)
    return grid

g = [[1, 1, 1], [1, 1, 0], [1, 0, 1]]
assert flood(g, 1, 1, 2) == [[2, 2, 2], [2, 2, 0], [2, 0, 1]]
