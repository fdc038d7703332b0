# expect: ok
def kmp_search(text, pat):
    fail = [0] * len(pat)
    k = 0
    for i in range(1, len(pat)):
        while k and pat[i] != pat[k]:
            k = fail[k - 1]
        if pat[i] == pat[k]:
            k += 1
        fail[i] = k
    res, k = [], 0
    for i, c in enumerate(text):
        while k and c != pat[k]:
            k = fail[k - 1]
        if c == pat[k]:
            k += 1
        if k == len(pat):
            res.append(i - k + 1)
            k = fail[k - 1]
    return res

assert kmp_search("abababcab", "abab") == [0, 2]
assert kmp_search("aaaaa", "aa") == [0, 1, 2, 3]
assert kmp_search("abc", "d") == []
