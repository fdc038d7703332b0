# expect: ok
def divisors(n):
    small = [d for d in range(1, int(n ** 0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))

assert divisors(28) == [1, 2, 4, 7, 14, 28]
assert divisors(1) == [1]
assert len(divisors(720)) == 30
