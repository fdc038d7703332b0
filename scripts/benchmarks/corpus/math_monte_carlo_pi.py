# expect: ok
import random

def estimate_pi(n, seed=1):
    r = random.Random(seed)
    inside = sum(1 for _ in range(n) if r.random() ** 2 + r.random() ** 2 <= 1)
    return 4 * inside / n

assert abs(estimate_pi(20000) - 3.14159) < 0.05
