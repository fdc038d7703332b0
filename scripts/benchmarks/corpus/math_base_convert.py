# expect: ok
def to_base(n, b):
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    if n == 0:
        return "0"
    sign = "-" if n < 0 else ""
    n = abs(n)
    out = []
    while n:
        n, r = divmod(n, b)
        out.append(digits[r])
    return sign + "".join(reversed(out))

assert to_base(255, 16) == "ff"
assert to_base(255, 2) == "11111111"
assert to_base(-35, 36) == "-z"
assert int(to_base(123456789, 7), 7) == 123456789
