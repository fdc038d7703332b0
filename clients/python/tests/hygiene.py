"""Runs Python the way the hygiene tests do: in a fresh interpreter in
development mode (asyncio's debug mode on) with every warning an error,
so that a ResourceWarning, a "coroutine was never awaited" or a "Task was
destroyed but it is pending!" reaches its stderr, which must stay empty."""

import os
import re
import subprocess
import sys

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# asyncio's debug mode also logs every loop step that took 0.1 s or more.
# That says how fast the machine is (the CI's VM suite emulates its CPU),
# not whether the client left anything behind, so those lines are dropped.
SLOW_STEP = re.compile(r"^Executing <.*> took \d+\.\d+ seconds\n", re.MULTILINE)


def run(*args, timeout=60, env=None):
    """`python3 -X dev -W error ARGS...` run to its end, its stderr without
    asyncio's slow-step lines. env: the process's environment; by default
    ours, with this package first on the module path."""
    if env is None:
        env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT)
    p = subprocess.run([sys.executable, "-X", "dev", "-W", "error", *args], capture_output=True, text=True,
                       timeout=timeout, env=env)
    p.stderr = SLOW_STEP.sub("", p.stderr)
    return p
