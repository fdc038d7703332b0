# expect: ok
def is_leap(y):
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)

assert is_leap(2000) and is_leap(2024)
assert not is_leap(1900) and not is_leap(2023)
assert sum(is_leap(y) for y in range(1901, 2001)) == 25
