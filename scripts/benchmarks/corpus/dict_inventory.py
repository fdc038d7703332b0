# expect: ok
def apply_orders(stock, orders):
    stock = dict(stock)
    rejected = []
    for item, qty in orders:
        if stock.get(item, 0) >= qty:
            stock[item] -= qty
        else:
            rejected.append(item)
    return stock, rejected

s, r = apply_orders({"apple": 5, "pear": 2}, [("apple", 3), ("pear", 3), ("fig", 1), ("apple", 2)])
assert s == {"apple": 0, "pear": 2}
assert r == ["pear", "fig"]
