# expect: AssertionError
def is_prime(n):
    return all(n % d for d in range(2, n))  # says 1 is prime

assert is_prime(7)
assert not is_prime(1)
