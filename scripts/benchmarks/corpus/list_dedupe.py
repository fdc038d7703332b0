# expect: ok
def dedupe(xs):
    seen = set()
    return [x for x in xs if not (x in seen or seen.add(x))]

assert dedupe([3, 1, 3, 2, 1, 4]) == [3, 1, 2, 4]
assert dedupe("mississippi") == ["m", "i", "s", "p"]
