# expect: ok
def insertion_sort(xs):
    xs = list(xs)
    for i in range(1, len(xs)):
        key, j = xs[i], i - 1
        while j >= 0 and xs[j] > key:
            xs[j + 1] = xs[j]
            j -= 1
        xs[j + 1] = key
    return xs

assert insertion_sort([12, 11, 13, 5, 6]) == [5, 6, 11, 12, 13]
assert insertion_sort("python") == sorted("python")
