# expect: ok
def gray(n):
    return [i ^ (i >> 1) for i in range(1 << n)]

g = gray(4)
assert len(set(g)) == 16
assert all(bin(a ^ b).count("1") == 1 for a, b in zip(g, g[1:]))
