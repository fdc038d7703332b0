# expect: ok
def selection_sort(xs):
    xs = list(xs)
    for i in range(len(xs)):
        m = min(range(i, len(xs)), key=xs.__getitem__)
        xs[i], xs[m] = xs[m], xs[i]
    return xs

assert selection_sort([64, 25, 12, 22, 11]) == [11, 12, 22, 25, 64]
