# agentjail harness, warm entry (/code/agentjail_harness_warm.py): what a
# warm run's zygote loads instead of running boot.py in every run. The
# zygote calls zygote() once: the harness's code is loaded there, as boot.py
# loads it (agentjail_harness.bin when it was compiled for this python's
# bytecode, else the sources), and a preloaded pyplot draws one figure
# (_draw_once). Each warm run calls main(), which runs it as
# boot.py does, with _warm set: compile() has had its first call in the
# zygote, so the harness compiles the program with it directly (its
# first-call workaround only costs there). See daemon/harness/harness.go.
import builtins
import importlib.machinery
import os
import sys

_dir = "/code"
_codes = []


def zygote():
    _load()
    plt = sys.modules.get("matplotlib.pyplot")  # preloaded by the environment
    if plt is not None:
        _draw_once(plt)


def _draw_once(plt):
    """Draws one small figure with text and saves it as PNG, then closes
    it: the fonts, the Agg renderer and the PNG writer are then loaded in
    the zygote, and a warm run's first figure costs what a later one does.
    The next figure is Figure 1 again."""
    try:
        import io
        fig = plt.figure(figsize=(1, 1), dpi=20)
        ax = fig.add_subplot()
        ax.plot([0, 1])
        ax.set_title("x")
        fig.savefig(io.BytesIO(), format="png")
    except Exception:
        pass
    finally:
        plt.close("all")


def _load():
    try:
        with open(_dir + "/agentjail_harness.bin", "rb") as f:
            b = f.read()
    except OSError:
        b = b""
    import _frozen_importlib_external
    if b[:4] == _frozen_importlib_external.MAGIC_NUMBER:
        import marshal
        _codes[:] = [marshal.loads(c) for c in marshal.loads(memoryview(b)[4:])]
        return
    for name in ("agentjail_harness_run.py", "agentjail_harness_lib.py"):
        with open(_dir + "/" + name, "rb") as f:
            _codes.append(compile(f.read(), _dir + "/" + name, "exec", dont_inherit=True))


def _code(i, name):
    return _codes[i]


def main():
    if sys.argv[0] != _dir + "/agentjail_harness.py":
        # Another program of the daemon's: a session's server (session.py),
        # run as python3 runs a script.
        with open(sys.argv[0], "rb") as f:
            src = f.read()
        return exec(compile(src, sys.argv[0], "exec", dont_inherit=True),
                    {"__name__": "__main__", "__file__": sys.argv[0], "__builtins__": builtins})
    try:
        os.set_inheritable(3, False)  # first: no child process may inherit the report channel
    except OSError:
        pass
    path = _dir + "/agentjail_harness.py"
    ns = {"__name__": "__main__", "__doc__": None, "__package__": None, "__spec__": None,
          "__loader__": importlib.machinery.SourceFileLoader("__main__", path), "__builtins__": builtins,
          "__file__": path, "__cached__": None, "_dir": _dir, "_code": _code, "_warm": True}
    mod = type(sys)("__main__")
    mod.__dict__.update(ns)
    sys.modules["__main__"] = mod
    exec(_codes[0], mod.__dict__)
