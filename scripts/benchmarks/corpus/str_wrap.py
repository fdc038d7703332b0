# expect: ok
import textwrap

def wrap(text, width):
    return textwrap.wrap(text, width)

lines = wrap("The quick brown fox jumps over the lazy dog", 10)
assert all(len(l) <= 10 for l in lines)
assert " ".join(lines) == "The quick brown fox jumps over the lazy dog"
