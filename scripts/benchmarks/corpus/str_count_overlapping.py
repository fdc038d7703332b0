# expect: ok
def count_overlapping(s, sub):
    return sum(1 for i in range(len(s) - len(sub) + 1) if s[i:i + len(sub)] == sub)

assert count_overlapping("aaaa", "aa") == 3
assert count_overlapping("abcabcabc", "abc") == 3
assert count_overlapping("abc", "d") == 0
