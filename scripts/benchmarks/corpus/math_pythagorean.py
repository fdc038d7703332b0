# expect: ok
def triples(limit):
    return [(a, b, c) for c in range(1, limit + 1) for b in range(1, c) for a in range(1, b)
            if a * a + b * b == c * c]

t = triples(30)
assert (3, 4, 5) in t and (20, 21, 29) in t
assert len(t) == 11
