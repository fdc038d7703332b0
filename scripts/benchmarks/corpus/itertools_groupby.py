# expect: ok
from itertools import groupby

def group_by_first_letter(words):
    words = sorted(words)
    return {k: list(g) for k, g in groupby(words, key=lambda w: w[0])}

assert group_by_first_letter(["apple", "avocado", "banana", "blueberry", "cherry"]) == {
    "a": ["apple", "avocado"], "b": ["banana", "blueberry"], "c": ["cherry"]}
