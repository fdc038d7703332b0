# expect: ok
def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a

assert [fib(i) for i in range(10)] == [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]
assert fib(90) == 2880067194370816120
