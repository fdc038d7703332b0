# agentjail harness: runs /code/main.py as __main__ exactly as
# `python3 -I -u /code/main.py` would, with the working directory (/workspace,
# where the request's files are) first on sys.path, then, when
# /code/tests.json exists, the tests. boot.py runs this code in its own globals (_dir: the directory
# standing for /code; _code: loads the harness's code); daemon/harness/harness.go
# says what the harness does and documents the report channel. This is the
# path of every run: it imports nothing python has not imported already; the
# exception and tests paths live in harness_lib.py, loaded only when needed.
import os
import sys


def _run(pid):
    skip = set()  # the harness's files: every frame below this one is the harness's
    f = sys._getframe()
    while f is not None:
        skip.add(f.f_code.co_filename)
        f = f.f_back
    path, code, got = _dir + "/main.py", None, []
    std = list(sys.path)  # python's own path, without the program's files: the harness imports from it

    def lib():
        if not got:
            got.append(_lib(skip, pid, std))
        return got[0]
    tests = os.path.exists(_dir + "/tests.json")
    if tests:
        lib()  # before the program runs: it cannot patch what the tests use
    _plots(lib)
    with open(path, "rb") as f:
        src = f.read()
    mod = type(sys)("__main__")
    ns = mod.__dict__  # the keys, in the order, of CPython's own __main__:
    ns.update(__loader__=type(__loader__)("__main__", path), __annotations__={}, __builtins__=__builtins__,
              __file__=path, __cached__=None)
    try:
        code = _compile(src, path)
        if hasattr(sys, "orig_argv"):
            sys.orig_argv = sys.orig_argv[:-len(sys.argv)] + [path]
        sys.argv = [path]
        sys.modules["__main__"] = mod
        _importable()
        exec(code, ns)
    except SystemExit:
        _figures(lib)
        raise  # python prints its message, if any, and exits with its code
    except BaseException as e:
        if code is not None:
            _figures(lib)
        lib().uncaught(e, ns, src if code is None else None)
        raise  # to python's own handler, through the hook uncaught installed
    _figures(lib)
    if tests:
        lib().run_tests(ns)
    ns.pop("__file__", None)  # as CPython does once __main__ has run
    ns.pop("__cached__", None)


class _Pyplot:
    """First on sys.meta_path until the program imports matplotlib.pyplot
    (never imported otherwise): then the harness's lib patches plt.show()
    to send the open figures as display entries (harness_lib.py)."""

    def __init__(self, lib):
        self.lib = lib

    def find_spec(self, name, path=None, target=None):
        if name != "matplotlib.pyplot":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        return self.lib().pyplot_spec(name, path, target)


def _plots(lib):
    plt = sys.modules.get("matplotlib.pyplot")  # a warm zygote may have preloaded it
    if plt is not None:
        lib().patch_pyplot(plt)
    else:
        sys.meta_path.insert(0, _Pyplot(lib))


def _figures(lib):
    """The figures left open at the program's end, as display entries."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        try:
            lib().figures(plt)
        except BaseException:
            pass


def _compile(src, path):
    """compile(src, path, "exec", dont_inherit=True), less the time that
    compile() spends on its first call creating the ast module's types (to
    check whether src is an AST), which exec() of source does not: a trace
    function catches the code exec() made before its first instruction runs,
    and the code is given the file's name (the same code: harness_test.go).
    A warning while compiling (it would name <string>), a syntax error or a
    tracer already set leave it to compile() itself. In a warm run (_warm,
    set by warm.py) compile() has had its first call in the zygote: it is
    called directly."""
    if globals().get("_warm"):
        return compile(src, path, "exec", dont_inherit=True)
    import _warnings
    w = sys.modules.get("warnings")  # once imported, its filters are the ones python applies
    got, filters, error = [], _warnings.filters if w is None else w.filters, ("error", None, Warning, None, 0)

    def grab(frame, event, arg):
        if frame.f_code.co_filename == "<string>":
            sys.settrace(None)
            got.append(frame.f_code)
            raise ValueError

    if sys.gettrace() is None and hasattr(_warnings, "_filters_mutated"):
        filters.insert(0, error)
        _warnings._filters_mutated()
        sys.settrace(grab)
        try:
            exec(src, {})
        except BaseException:
            pass
        sys.settrace(None)
        filters.remove(error)
        _warnings._filters_mutated()
    return _rename(got[0], path) if got else compile(src, path, "exec", dont_inherit=True)


def _rename(code, path):
    consts = tuple(_rename(c, path) if type(c) is type(code) else c for c in code.co_consts)
    return code.replace(co_filename=path, co_consts=consts)


def _importable():
    """Puts the working directory, where the request's files are, first on
    sys.path, as `python3 main.py` puts the program's directory: a program
    imports the modules it was given. Only now, after python started: -I
    keeps it off the path while site runs, so a sitecustomize.py there is
    never run, and the harness has imported what it needs before."""
    try:
        sys.path.insert(0, os.getcwd())
    except OSError:
        pass  # a working directory that is gone: nothing to import from


def _lib(skip, pid, std):
    # Its own copy of the builtins: a program that patches builtins does not reach it.
    # std: python's own sys.path, the one the lib imports from (harness_lib's _std).
    ns = {"__name__": "agentjail_harness_lib", "__builtins__": dict(__builtins__.__dict__), "_stdpath": std}
    exec(_code(1, "agentjail_harness_lib.py"), ns)
    return ns["Harness"](skip, _dir, pid)


_run(os.getpid())
