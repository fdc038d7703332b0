# expect: print
import sys

def collatz(n):
    seq = [n]
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        seq.append(n)
    return seq

seq = collatz(7)
print(" -> ".join(map(str, seq)))
print(f"{len(seq)} steps", file=sys.stderr)
assert seq[-1] == 1
