# expect: ok
def merge_sort(xs):
    if len(xs) <= 1:
        return xs
    mid = len(xs) // 2
    a, b = merge_sort(xs[:mid]), merge_sort(xs[mid:])
    out = []
    while a and b:
        out.append(a.pop(0) if a[0] <= b[0] else b.pop(0))
    return out + a + b

import random
data = random.Random(5).sample(range(1000), 300)
assert merge_sort(data) == sorted(data)
assert merge_sort([]) == []
