# expect: AssertionError
def fib(n):
    if n <= 1:
        return 1  # fib(0) should be 0
    return fib(n - 1) + fib(n - 2)

assert fib(5) == 5
