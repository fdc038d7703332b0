# expect: ok
def histogram(s):
    counts = {}
    for c in s:
        if c.isalpha():
            counts[c.lower()] = counts.get(c.lower(), 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))

assert histogram("Mississippi")[:2] == [("i", 4), ("s", 4)]
assert histogram("") == []
