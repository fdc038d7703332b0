# expect: print
sales = {"north": [120, 80, 95], "south": [60, 75], "east": [200], "west": []}
for region in sorted(sales):
    xs = sales[region]
    avg = sum(xs) / len(xs) if xs else 0.0
    print(f"{region:>6}: n={len(xs)} total={sum(xs):4d} avg={avg:7.2f}")
assert max(sales, key=lambda r: sum(sales[r])) == "north"
