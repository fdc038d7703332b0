# expect: ok
from functools import lru_cache

def word_break(s, words):
    words = frozenset(words)
    @lru_cache(maxsize=None)
    def ok(i):
        return i == len(s) or any(s[i:j] in words and ok(j) for j in range(i + 1, len(s) + 1))
    return ok(0)

assert word_break("leetcode", ["leet", "code"])
assert word_break("applepenapple", ["apple", "pen"])
assert not word_break("catsandog", ["cats", "dog", "sand", "and", "cat"])
