class ParseError(Exception):
    pass

def parse(s):
    try:
        return int(s)
    except ValueError as e:
        raise ParseError(f"bad number {s!r}") from e

def load():
    try:
        {}["missing"]
    except KeyError:
        parse("x1")

load()
