# expect: ok
def longest_unique(s):
    seen, start, best = {}, 0, 0
    for i, c in enumerate(s):
        if seen.get(c, -1) >= start:
            start = seen[c] + 1
        seen[c] = i
        best = max(best, i - start + 1)
    return best

assert longest_unique("abcabcbb") == 3
assert longest_unique("bbbbb") == 1
assert longest_unique("pwwkew") == 3
assert longest_unique("") == 0
