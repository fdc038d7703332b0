# expect: ok
def partition(xs):
    return [x for x in xs if x % 2 == 0], [x for x in xs if x % 2]

assert partition([1, 2, 3, 4, 5, 6]) == ([2, 4, 6], [1, 3, 5])
assert partition([]) == ([], [])
