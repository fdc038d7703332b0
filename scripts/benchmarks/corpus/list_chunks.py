# expect: ok
def chunks(xs, n):
    return [xs[i:i + n] for i in range(0, len(xs), n)]

assert chunks(list(range(7)), 3) == [[0, 1, 2], [3, 4, 5], [6]]
assert chunks([], 2) == []
