# Builds and checks daemon/harness/harness.bin: the harness's code compiled
# by this python, as boot.py loads it (this python's magic number, then
# marshal of a tuple of the marshalled code of each file). Run by
# harness_test.go:
#   python3 -I compile.py build HARNESS_DIR OUT   writes OUT
#   python3 -I compile.py check HARNESS_DIR BIN   exits 1 when BIN is not
#                                                 the sources' code
import marshal
import sys
from importlib.util import MAGIC_NUMBER

FILES = [("harness.py", "/code/agentjail_harness_run.py"), ("harness_lib.py", "/code/agentjail_harness_lib.py")]


def codes(src_dir):
    out = []
    for name, jail_name in FILES:
        with open(src_dir + "/" + name, "rb") as f:
            out.append(compile(f.read(), jail_name, "exec", dont_inherit=True))
    return out


def same(a, b, where):
    """Two code objects are the same code: every attribute, recursively."""
    for at in ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_nlocals", "co_stacksize", "co_flags",
               "co_code", "co_names", "co_varnames", "co_freevars", "co_cellvars", "co_filename", "co_name",
               "co_qualname", "co_firstlineno", "co_linetable", "co_exceptiontable"):
        if hasattr(a, at) and getattr(a, at) != getattr(b, at):
            return "%s: %s differs" % (where, at)
    if len(a.co_consts) != len(b.co_consts):
        return "%s: co_consts differ" % where
    for x, y in zip(a.co_consts, b.co_consts):
        if type(x) is not type(y):
            return "%s: a constant's type differs" % where
        if type(x) is type(a):
            why = same(x, y, where + "." + x.co_name)
            if why:
                return why
        elif x != y and x == x:
            return "%s: constant %r differs" % (where, x)
    return None


def main():
    mode, src_dir, path = sys.argv[1:4]
    if mode == "build":
        with open(path, "wb") as f:
            f.write(MAGIC_NUMBER + marshal.dumps(tuple(marshal.dumps(c) for c in codes(src_dir))))
        return
    with open(path, "rb") as f:
        b = f.read()
    if b[:4] != MAGIC_NUMBER:
        sys.exit("%s was built for another python (magic %r, this one's %r)" % (path, b[:4], MAGIC_NUMBER))
    built = [marshal.loads(c) for c in marshal.loads(b[4:])]
    for (name, _), want, got in zip(FILES, codes(src_dir), built):
        why = same(want, got, name)
        if why:
            sys.exit("%s is stale: %s" % (path, why))
    if len(built) != len(FILES):
        sys.exit("%s has %d files, not %d" % (path, len(built), len(FILES)))


main()
