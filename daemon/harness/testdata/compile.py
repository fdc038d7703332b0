# Builds and checks daemon/harness/harness.bin: the harness's code compiled
# by this python, as boot.py loads it (this python's magic number, then
# marshal of a tuple of the marshalled code of each file); and checks parts
# of the harness that a run cannot show. Run by harness_test.go:
#   python3 -I compile.py build HARNESS_DIR OUT    writes OUT
#   python3 -I compile.py check HARNESS_DIR BIN    exits 1 when BIN is not
#                                                  the sources' code
#   python3 -I compile.py fast HARNESS_DIR FILE... exits 1 when harness.py's
#                                                  _compile differs from compile()
#   python3 -I compile.py json HARNESS_DIR         exits 1 when harness_lib.py's
#                                                  JSON functions are not json's
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


def load(path, drop_last_line=False):
    """The names a harness file defines, without running it."""
    with open(path) as f:
        src = f.read()
    if drop_last_line:  # harness.py ends by running the program
        src = src.rstrip("\n").rsplit("\n", 1)[0]
    ns = {"__builtins__": __builtins__, "__name__": "selftest"}
    exec(compile(src, path, "exec"), ns)
    return ns


def fast(src_dir, files):
    ns = load(src_dir + "/harness.py", drop_last_line=True)
    _compile, slow = ns["_compile"], []
    ns["compile"] = lambda *a, **k: slow.append(a[1]) or compile(*a, **k)
    import warnings
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        _compile(b"x = 1\nif x is 1:\n    pass\n", "/code/main.py")
    if [(x.category.__name__, x.filename, x.lineno) for x in w] != [("SyntaxWarning", "/code/main.py", 2)]:
        sys.exit("a warning while compiling: %s" % [(x.category, x.filename, x.lineno) for x in w])
    del slow[:]
    n = 0
    for path in files:
        with open(path, "rb") as f:
            src = f.read()
        try:
            want = compile(src, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            continue
        why = same(want, _compile(src, path), path)
        if why:
            sys.exit(why)
        n += 1
    if len(slow) > n // 10:
        sys.exit("the fast path was not taken for %d of %d files: %s" % (len(slow), n, slow))


def json_(src_dir):
    import json
    lib = load(src_dir + "/harness_lib.py")
    q = lib["_py_quote"]
    for s in ["", "plain", 'a"b\\c/', "\n\t\r\b\f\x00\x1f\x7f", "é ✓ 😀 \U0010ffff", "\ud800 \udfff", "".join(map(chr, range(0, 0x3000, 7)))]:
        got = q(s)
        if not got.isascii() or json.loads(got) != s or lib["_quote"]()(s) != json.dumps(s):
            sys.exit("_py_quote(%r) = %r" % (s, got))

    class I(int):
        def __repr__(self):
            return "I()"

    class F(float):
        def __repr__(self):
            return "F()"

    class L(list):
        pass

    class D(dict):
        pass

    cyclic = [1]
    cyclic.append(cyclic)
    values = [0, -1, 2**64, 10**100, 0.1, -0.0, 1e16, 1.5e-7, 1e308, True, False, None, "é\n✓", I(3), F(2.5),
              (1, [2, (3,)]), L([1]), D(a=1), {"a": {"b": [None]}}, {1: 2, 2.5: 3, True: 4, None: 5, "s": 6},
              [[[]]], {}, [], "", set(), frozenset(), float("nan"), float("inf"), cyclic, {(1, 2): 3}, object(), b"x",
              {"k": {1, 2}}, complex(1, 2)]
    enc = lib["_encoder"](", ", ": ", False)
    for v in values:
        def outcome(f):
            try:
                return f(v)
            except Exception as e:
                return "%s: %s" % (type(e).__name__, e)
        want, got = outcome(lambda v: json.dumps(v, allow_nan=False)), outcome(enc)
        if want != got:
            sys.exit("encoding %r: %r, json.dumps: %r" % (v, got, want))
    rec = lib["_encoder"](",", ":", True)
    r = {"t": "case", "i": 1, "ms": 0.25, "raised": {"type": "E", "mro": ["E", "BaseException"], "message": "é"}}
    if rec(r) != json.dumps(r, separators=(",", ":")):
        sys.exit("record %r" % rec(r))
    loads = lib["_loads"]
    for doc in ['{"function":"f","cases":[{"args":[1,-2.5e3,"\\u00e9",null,true,false,[],{}],"kwargs":{"k":{"a":[1]}}}]}',
                "123456789012345678901234567890", '"x"', "[1,2]"]:
        if loads(doc) != json.loads(doc) or type(loads(doc)) != type(json.loads(doc)):
            sys.exit("decoding %r: %r" % (doc, loads(doc)))
    for bad in ["", "{", "[1,]", "[1] [2]", "nul", '{"a":1}x']:
        try:
            loads(bad)
        except ValueError:
            continue
        sys.exit("decoded %r" % bad)


def main():
    mode, src_dir = sys.argv[1:3]
    if mode == "fast":
        return fast(src_dir, sys.argv[3:])
    if mode == "json":
        return json_(src_dir)
    path = sys.argv[3]
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
