# expect: ok
import re

def acronym(phrase):
    return "".join(w[0].upper() for w in re.split(r"[\s\-_]+", phrase) if w)

assert acronym("Portable Network Graphics") == "PNG"
assert acronym("complementary metal-oxide semiconductor") == "CMOS"
assert acronym("as soon as possible") == "ASAP"
