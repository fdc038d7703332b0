# expect: ok
def reverse_int(x):
    sign = -1 if x < 0 else 1
    r = sign * int(str(abs(x))[::-1])
    return r if -2 ** 31 <= r < 2 ** 31 else 0

assert reverse_int(123) == 321
assert reverse_int(-120) == -21
assert reverse_int(1534236469) == 0
