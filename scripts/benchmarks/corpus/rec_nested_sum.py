# expect: ok
def nested_sum(x):
    if isinstance(x, (list, tuple)):
        return sum(nested_sum(y) for y in x)
    return x

assert nested_sum([1, [2, 3], [[4], (5, [6])]]) == 21
assert nested_sum([]) == 0
