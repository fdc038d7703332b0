# expect: TypeError
def total(items):
    return sum(items)

assert total([1, 2]) == 3
assert total([1, "2", 3]) == 6
