# expect: ok
def binary_search(xs, target):
    lo, hi = 0, len(xs) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if xs[mid] == target:
            return mid
        if xs[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1

data = list(range(0, 200, 3))
assert all(binary_search(data, x) == i for i, x in enumerate(data))
assert binary_search(data, 4) == -1
assert binary_search([], 1) == -1
