# expect: ok
def letter_case_perms(s):
    if not s:
        return [""]
    rest = letter_case_perms(s[1:])
    heads = {s[0].lower(), s[0].upper()}
    return sorted(h + r for h in heads for r in rest)

assert letter_case_perms("a1b2") == ["A1B2", "A1b2", "a1B2", "a1b2"]
assert letter_case_perms("12") == ["12"]
