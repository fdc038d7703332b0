# expect: ok
def prime_factors(n):
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out

assert prime_factors(360) == [2, 2, 2, 3, 3, 5]
assert prime_factors(97) == [97]
assert prime_factors(600851475143)[-1] == 6857
