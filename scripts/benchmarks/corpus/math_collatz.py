# expect: ok
def collatz_len(n):
    steps = 1
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps

assert collatz_len(1) == 1
assert collatz_len(27) == 112
assert max(range(1, 1000), key=collatz_len) == 871
