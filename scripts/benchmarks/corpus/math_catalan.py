# expect: ok
def catalan(n):
    c = [1] + [0] * n
    for i in range(1, n + 1):
        c[i] = sum(c[j] * c[i - 1 - j] for j in range(i))
    return c[n]

assert [catalan(i) for i in range(8)] == [1, 1, 2, 5, 14, 42, 132, 429]
