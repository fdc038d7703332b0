# expect: ok
def word_index(lines):
    idx = {}
    for n, line in enumerate(lines, 1):
        for w in set(line.lower().split()):
            idx.setdefault(w, []).append(n)
    return idx

idx = word_index(["the cat", "a dog", "The dog and the cat"])
assert idx["the"] == [1, 3]
assert idx["dog"] == [2, 3]
assert "bird" not in idx
