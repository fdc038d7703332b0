# expect: AssertionError
def sum_to(n):
    return sum(range(n))  # should be range(n + 1)

assert sum_to(1) == 1
assert sum_to(10) == 55
