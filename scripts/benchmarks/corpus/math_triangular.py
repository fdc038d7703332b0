# expect: ok
def first_triangular_with_divisors(k):
    n = 1
    while True:
        t = n * (n + 1) // 2
        count = 0
        d = 1
        while d * d <= t:
            if t % d == 0:
                count += 2 if d * d != t else 1
            d += 1
        if count > k:
            return t
        n += 1

assert first_triangular_with_divisors(5) == 28
assert first_triangular_with_divisors(50) == 25200
