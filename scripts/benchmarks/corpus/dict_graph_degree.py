# expect: ok
def degrees(edges):
    deg = {}
    for a, b in edges:
        deg[a] = deg.get(a, 0) + 1
        deg[b] = deg.get(b, 0) + 1
    return deg

d = degrees([(1, 2), (2, 3), (3, 1), (3, 4)])
assert d == {1: 2, 2: 2, 3: 3, 4: 1}
