# expect: ok
def pow_mod(b, e, m):
    out = 1
    b %= m
    while e:
        if e & 1:
            out = out * b % m
        b = b * b % m
        e >>= 1
    return out

assert pow_mod(2, 10, 1000) == 24
assert pow_mod(3, 200, 13) == pow(3, 200, 13)
assert pow_mod(7, 0, 5) == 1
