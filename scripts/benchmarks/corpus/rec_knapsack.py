# expect: ok
def knapsack(items, cap):
    best = [0] * (cap + 1)
    for w, v in items:
        for c in range(cap, w - 1, -1):
            best[c] = max(best[c], best[c - w] + v)
    return best[cap]

assert knapsack([(1, 1), (3, 4), (4, 5), (5, 7)], 7) == 9
assert knapsack([], 10) == 0
