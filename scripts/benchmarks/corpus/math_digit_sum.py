# expect: ok
def digit_sum(n):
    return sum(int(d) for d in str(abs(n)))

def digital_root(n):
    while n >= 10:
        n = digit_sum(n)
    return n

assert digit_sum(12345) == 15
assert digital_root(493193) == 2
assert digit_sum(-909) == 18
