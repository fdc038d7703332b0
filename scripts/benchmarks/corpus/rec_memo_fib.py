# expect: ok
from functools import lru_cache

@lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

assert fib(100) == 354224848179261915075
assert fib.cache_info().currsize == 101
