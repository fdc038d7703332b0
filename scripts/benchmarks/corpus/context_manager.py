# expect: ok
from contextlib import contextmanager

log = []

@contextmanager
def tag(name):
    log.append(f"<{name}>")
    try:
        yield
    finally:
        log.append(f"</{name}>")

with tag("a"):
    with tag("b"):
        log.append("x")
assert "".join(log) == "<a><b>x</b></a>"
