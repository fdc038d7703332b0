# expect: ok
from collections import Counter

def top_k(words, k):
    c = Counter(words)
    return [w for w, _ in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]

assert top_k(["i", "love", "code", "i", "love", "python"], 2) == ["i", "love"]
assert top_k(["a"], 3) == ["a"]
