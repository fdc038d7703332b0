# expect: ok
def is_perfect(n):
    if n < 2:
        return False
    s = 1
    i = 2
    while i * i <= n:
        if n % i == 0:
            s += i
            if i != n // i:
                s += n // i
        i += 1
    return s == n

assert [n for n in range(1, 1000) if is_perfect(n)] == [6, 28, 496]
assert is_perfect(8128)
