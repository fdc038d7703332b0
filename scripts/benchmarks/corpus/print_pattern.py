# expect: print
def diamond(n):
    rows = [" " * (n - i - 1) + "*" * (2 * i + 1) for i in range(n)]
    return rows + rows[-2::-1]

for line in diamond(4):
    print(line)
assert len(diamond(4)) == 7
