# expect: ok
def sort_words(words):
    return sorted(words, key=lambda w: (len(w), w.lower()))

assert sort_words(["banana", "Fig", "apple", "kiwi", "date"]) == ["Fig", "date", "kiwi", "apple", "banana"]
