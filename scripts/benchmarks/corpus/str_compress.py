# expect: ok
def compress(s):
    if not s:
        return s
    out, count = [], 1
    for a, b in zip(s, s[1:]):
        if a == b:
            count += 1
        else:
            out.append(a + (str(count) if count > 1 else ""))
            count = 1
    out.append(s[-1] + (str(count) if count > 1 else ""))
    r = "".join(out)
    return r if len(r) < len(s) else s

assert compress("aabcccccaaa") == "a2bc5a3"
assert compress("abc") == "abc"
assert compress("") == ""
