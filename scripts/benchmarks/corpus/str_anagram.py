# expect: ok
def is_anagram(a, b):
    clean = lambda s: sorted(s.replace(" ", "").lower())
    return clean(a) == clean(b)

assert is_anagram("Listen", "Silent")
assert is_anagram("dormitory", "dirty room")
assert not is_anagram("abc", "abd")
