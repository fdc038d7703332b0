# expect: ok
def title_case(s, minor=("a", "an", "the", "of", "in", "and")):
    words = s.lower().split()
    return " ".join(w if i and w in minor else w.capitalize() for i, w in enumerate(words))

assert title_case("the lord of the rings") == "The Lord of the Rings"
assert title_case("a tale of two cities") == "A Tale of Two Cities"
