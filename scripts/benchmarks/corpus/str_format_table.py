# expect: print
rows = [("apple", 3, 0.5), ("banana", 12, 0.25), ("cherry", 100, 2.0)]
print(f"{'item':<8}{'qty':>5}{'price':>8}")
for name, qty, price in rows:
    print(f"{name:<8}{qty:>5}{price:>8.2f}")
total = sum(q * p for _, q, p in rows)
print(f"total: {total:.2f}")
assert abs(total - 204.5) < 1e-9
