# expect: print
primes = [n for n in range(2, 100) if all(n % d for d in range(2, int(n ** 0.5) + 1))]
print("primes below 100:", *primes)
print("count:", len(primes))
assert len(primes) == 25
