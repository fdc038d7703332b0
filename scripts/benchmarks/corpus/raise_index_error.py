# expect: IndexError
def last_two(xs):
    return xs[-1], xs[-2]

assert last_two([1, 2, 3]) == (3, 2)
assert last_two([1])
