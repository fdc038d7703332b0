# expect: ok
def is_isogram(word):
    letters = [c.lower() for c in word if c.isalpha()]
    return len(letters) == len(set(letters))

assert is_isogram("lumberjacks")
assert is_isogram("six-year-old")
assert not is_isogram("isograms")
