# expect: ValueError
def parse_ints(s):
    return [int(p) for p in s.split(",")]

assert parse_ints("1,2,3") == [1, 2, 3]
assert parse_ints("4,five,6") == [4, 5, 6]
