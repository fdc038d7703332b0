# expect: timeout
def binary_search(xs, target):
    lo, hi = 0, len(xs) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if xs[mid] == target:
            return mid
        if xs[mid] < target:
            lo = mid  # should be mid + 1: never ends once hi == lo + 1
        else:
            hi = mid - 1
    return -1

assert binary_search([1, 3, 5, 7], 3) == 1
assert binary_search([1, 3, 5, 7], 6) == -1
