# expect: ok
def remove_all(xs, v):
    i = 0
    for x in xs:
        if x != v:
            xs[i] = x
            i += 1
    del xs[i:]
    return i

a = [3, 2, 2, 3]
assert remove_all(a, 3) == 2 and a == [2, 2]
b = [0, 1, 2, 2, 3, 0, 4, 2]
assert remove_all(b, 2) == 5 and b == [0, 1, 3, 0, 4]
