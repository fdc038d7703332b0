# expect: ok
def word_freq(text):
    freq = {}
    for w in text.lower().split():
        w = w.strip(".,!?;:")
        if w:
            freq[w] = freq.get(w, 0) + 1
    return freq

f = word_freq("The cat and the hat. The end!")
assert f["the"] == 3
assert f["cat"] == 1 and f["end"] == 1
assert len(f) == 5
