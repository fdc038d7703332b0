# expect: ok
def quicksort(xs):
    if len(xs) <= 1:
        return xs
    pivot = xs[len(xs) // 2]
    return (quicksort([x for x in xs if x < pivot]) + [x for x in xs if x == pivot]
            + quicksort([x for x in xs if x > pivot]))

assert quicksort([3, 6, 8, 10, 1, 2, 1]) == [1, 1, 2, 3, 6, 8, 10]
assert quicksort(list(range(50, 0, -1))) == list(range(1, 51))
