# expect: ok
def reverse_words(s):
    return " ".join(reversed(s.split()))

assert reverse_words("the sky is blue") == "blue is sky the"
assert reverse_words("  hello world  ") == "world hello"
assert reverse_words("one") == "one"
