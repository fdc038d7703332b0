# expect: ok
from collections import Counter

def letter_counts(words):
    total = Counter()
    for w in words:
        total.update(w)
    return total

c = letter_counts(["hello", "world"])
assert c["l"] == 3 and c["o"] == 2 and c["z"] == 0
assert sum(c.values()) == 10
