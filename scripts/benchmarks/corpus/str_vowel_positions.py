# expect: ok
def vowel_positions(s):
    return [i for i, c in enumerate(s) if c in "aeiouAEIOU"]

assert vowel_positions("education") == [0, 2, 4, 6, 7]
assert vowel_positions("xyz") == []
