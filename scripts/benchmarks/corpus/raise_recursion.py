# expect: RecursionError
def count_down(n):
    if n == 0:
        return 0
    return count_down(n - 2)  # skips 0 for odd n

assert count_down(4) == 0
assert count_down(5) == 0
