# expect: ok
def bubble_sort(xs):
    xs = list(xs)
    for end in range(len(xs) - 1, 0, -1):
        swapped = False
        for i in range(end):
            if xs[i] > xs[i + 1]:
                xs[i], xs[i + 1] = xs[i + 1], xs[i]
                swapped = True
        if not swapped:
            break
    return xs

assert bubble_sort([5, 1, 4, 2, 8]) == [1, 2, 4, 5, 8]
assert bubble_sort([]) == []
