# expect: ok
def read(lines):
    for line in lines:
        yield line.strip()

def nonempty(xs):
    return (x for x in xs if x and not x.startswith("#"))

def parse(xs):
    for x in xs:
        k, _, v = x.partition("=")
        yield k.strip(), v.strip()

text = ["# comment", "a = 1", "", "b=two", "  c =  3 "]
assert dict(parse(nonempty(read(text)))) == {"a": "1", "b": "two", "c": "3"}
