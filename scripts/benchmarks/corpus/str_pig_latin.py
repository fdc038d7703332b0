# expect: ok
def pig_latin(word):
    vowels = "aeiou"
    if word[0] in vowels:
        return word + "way"
    for i, c in enumerate(word):
        if c in vowels:
            return word[i:] + word[:i] + "ay"
    return word + "ay"

assert pig_latin("apple") == "appleway"
assert pig_latin("string") == "ingstray"
assert pig_latin("rhythm") == "rhythmay"
