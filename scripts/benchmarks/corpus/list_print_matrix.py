# expect: print
m = [[i * j for j in range(1, 6)] for i in range(1, 6)]
for row in m:
    print(" ".join(f"{x:3d}" for x in row))
assert m[4][4] == 25
