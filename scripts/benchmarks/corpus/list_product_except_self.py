# expect: ok
def product_except_self(xs):
    n = len(xs)
    out = [1] * n
    left = 1
    for i in range(n):
        out[i] = left
        left *= xs[i]
    right = 1
    for i in reversed(range(n)):
        out[i] *= right
        right *= xs[i]
    return out

assert product_except_self([1, 2, 3, 4]) == [24, 12, 8, 6]
assert product_except_self([0, 4, 5]) == [20, 0, 0]
