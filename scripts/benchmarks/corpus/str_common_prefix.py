# expect: ok
def common_prefix(words):
    if not words:
        return ""
    p = words[0]
    for w in words[1:]:
        while not w.startswith(p):
            p = p[:-1]
    return p

assert common_prefix(["flower", "flow", "flight"]) == "fl"
assert common_prefix(["dog", "racecar", "car"]) == ""
assert common_prefix(["same", "same"]) == "same"
assert common_prefix([]) == ""
