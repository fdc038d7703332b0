# expect: KeyError
def price(item):
    prices = {"apple": 0.5, "pear": 0.75}
    return prices[item]

assert price("apple") == 0.5
assert price("mango") > 0
