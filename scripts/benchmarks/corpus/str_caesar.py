# expect: ok
def caesar(s, k):
    out = []
    for c in s:
        if c.isupper():
            out.append(chr((ord(c) - 65 + k) % 26 + 65))
        elif c.islower():
            out.append(chr((ord(c) - 97 + k) % 26 + 97))
        else:
            out.append(c)
    return "".join(out)

assert caesar("abc xyz", 3) == "def abc"
assert caesar(caesar("Secret Message!", 11), -11) == "Secret Message!"
