# expect: ok
def longest_word(sentence):
    words = [w.strip(".,") for w in sentence.split()]
    return max(words, key=len) if words else ""

assert longest_word("I love programming in Python.") == "programming"
assert longest_word("a bb cc") == "bb"
assert longest_word("") == ""
