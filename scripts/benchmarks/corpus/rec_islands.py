# expect: ok
def islands(grid):
    grid = [list(r) for r in grid]
    def sink(i, j):
        if 0 <= i < len(grid) and 0 <= j < len(grid[0]) and grid[i][j] == "1":
            grid[i][j] = "0"
            for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                sink(i + di, j + dj)
            return 1
        return 0
    return sum(sink(i, j) for i in range(len(grid)) for j in range(len(grid[0])))

assert islands(["11000", "11000", "00100", "00011"]) == 3
assert islands(["111", "010", "111"]) == 1
