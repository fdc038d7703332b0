# agentjail harness, boot: the program the jail runs, as /code/agentjail_harness.py.
# python compiles its program on every start, at a cost that grows with each
# line of code (the harness's own too), so this file only loads its code
# as agentjail's build compiled it (agentjail_harness.bin, marshal), when that
# was for this python's bytecode, and compiles the sources otherwise. It then
# runs harness.py (as /code/agentjail_harness_run.py). See daemon/harness/harness.go.
import os
import sys

try:
    os.set_inheritable(3, False)  # first: no child process may inherit the report channel
except OSError:
    pass
_dir = sys.argv[1] if len(sys.argv) > 1 else "/code"  # only tests pass it
try:
    with open(_dir + "/agentjail_harness.bin", "rb") as _f:
        _bin = _f.read()
except OSError:
    _bin = b""


def _code(i, name):
    """The code of one of the harness's files (0: run, 1: lib)."""
    import _frozen_importlib_external
    if _bin[:4] == _frozen_importlib_external.MAGIC_NUMBER:
        import marshal
        return marshal.loads(marshal.loads(memoryview(_bin)[4:])[i])
    with open(_dir + "/" + name, "rb") as f:
        return compile(f.read(), _dir + "/" + name, "exec", dont_inherit=True)


exec(_code(0, "agentjail_harness_run.py"))
