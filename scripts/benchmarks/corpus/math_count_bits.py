# expect: ok
def count_bits(n):
    c = 0
    while n:
        n &= n - 1
        c += 1
    return c

assert [count_bits(i) for i in range(8)] == [0, 1, 1, 2, 1, 2, 2, 3]
assert count_bits(2 ** 64 - 1) == 64
