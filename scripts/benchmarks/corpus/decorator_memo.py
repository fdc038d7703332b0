# expect: ok
calls = 0

def memo(f):
    cache = {}
    def wrapper(*args):
        if args not in cache:
            cache[args] = f(*args)
        return cache[args]
    return wrapper

@memo
def slow_square(x):
    global calls
    calls += 1
    return x * x

assert [slow_square(i % 5) for i in range(20)] == [(i % 5) ** 2 for i in range(20)]
assert calls == 5
