# expect: ok
def reverse(s):
    return s[::-1]

assert reverse("hello") == "olleh"
assert reverse("") == ""
assert reverse("a") == "a"
