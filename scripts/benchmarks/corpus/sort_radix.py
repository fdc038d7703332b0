# expect: ok
def radix_sort(xs):
    if not xs:
        return xs
    exp = 1
    while max(xs) // exp:
        buckets = [[] for _ in range(10)]
        for x in xs:
            buckets[x // exp % 10].append(x)
        xs = [x for b in buckets for x in b]
        exp *= 10
    return xs

assert radix_sort([170, 45, 75, 90, 802, 24, 2, 66]) == [2, 24, 45, 66, 75, 90, 170, 802]
