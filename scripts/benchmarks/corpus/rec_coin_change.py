# expect: ok
from functools import lru_cache

def ways(coins, amount):
    coins = tuple(sorted(coins))
    @lru_cache(maxsize=None)
    def go(i, left):
        if left == 0:
            return 1
        if i == len(coins) or left < 0:
            return 0
        return go(i, left - coins[i]) + go(i + 1, left)
    return go(0, amount)

assert ways([1, 2, 5], 5) == 4
assert ways([2], 3) == 0
assert ways([1, 5, 10, 25, 50], 100) == 292
