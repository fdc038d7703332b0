# expect: ok
def gcd(a, b):
    while b:
        a, b = b, a % b
    return abs(a)

assert gcd(48, 18) == 6
assert gcd(17, 5) == 1
assert gcd(0, 9) == 9
assert gcd(-12, 8) == 4
