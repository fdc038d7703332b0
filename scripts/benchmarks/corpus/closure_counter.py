# expect: ok
def make_counter(start=0):
    n = start
    def inc(step=1):
        nonlocal n
        n += step
        return n
    return inc

c = make_counter(10)
c(); c(); c(5)
assert c() == 18
d = make_counter()
assert d() == 1
