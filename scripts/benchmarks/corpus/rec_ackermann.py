# expect: ok
import sys
sys.setrecursionlimit(5000)

def ack(m, n):
    if m == 0:
        return n + 1
    if n == 0:
        return ack(m - 1, 1)
    return ack(m - 1, ack(m, n - 1))

assert ack(1, 2) == 4
assert ack(2, 3) == 9
assert ack(3, 3) == 61
