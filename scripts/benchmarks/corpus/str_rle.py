# expect: ok
def rle_encode(s):
    out = []
    i = 0
    while i < len(s):
        j = i
        while j < len(s) and s[j] == s[i]:
            j += 1
        out.append(f"{j - i}{s[i]}")
        i = j
    return "".join(out)

def rle_decode(s):
    out, num = [], ""
    for c in s:
        if c.isdigit():
            num += c
        else:
            out.append(c * int(num))
            num = ""
    return "".join(out)

assert rle_encode("aaabccdddd") == "3a1b2c4d"
assert rle_decode("3a1b2c4d") == "aaabccdddd"
assert rle_decode(rle_encode("zzzzzzzzzzzzy")) == "zzzzzzzzzzzzy"
