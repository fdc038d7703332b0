#!/usr/bin/env python3
"""A warm run's program, step by step (issue 36): the CPU and the page
copies of each step from the zygote's fork to the request's code. The
program is a fork of the zygote, and every page it first writes to is
copied (in python, touching an object writes its reference count), so
page faults are what most of its steps cost.

Builds a copy of the source tree at REV (default HEAD) whose
nsjail/zygote_program.py notes, at each step, the thread's CPU time and
its minor faults so far; the program of each run prints them. A daemon
of that binary does N kept-alive warm runs of a program that reads its
own figures first thing. Prints the median of each step. Run as root:

    python3 scripts/benchmarks/trace_program.py [--rev REV] [--runs 200]

The steps are named by the line each ends before (CHECKPOINTS below);
one that no longer matches the source is an error, so that the table
never silently loses a row. The figures include the checkpoints' own
cost (a getrusage and a list append, some 5 us each).
"""
import argparse, collections, os, shutil, statistics, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

# (step, the source line it ends before); each runs to the next.
CHECKPOINTS = [
    ("the fork's child side (CPython's and the fork hooks')", "        signal.set_wakeup_fd(-1)"),
    ("the zygote's fds and signals let go, a session", "        os.setresgid(uid, uid, uid)"),
    ("the run's uid", "        ns = fds[1:Z_NS]"),
    ("the run's namespaces joined", "        if not _caps:"),
    ("the bounding set dropped", "        _warm_up()"),
    ("the warm-up (ahead of the request)", "        _send(run, MSG_READY)"),
    ("ready, the request read and carried out", "        typ, _, join = _recv(run)"),
    ("go", "        _start_program(run, st, join)"),
    ("the cgroup joined, capabilities, the filter", "    _run_program(run, st)"),
    ("fds closed, the environment, the title", "    _exit_like_python(path)\n\n\ndef _reseed"),
]

PROBE = '''_STEPS = []


def _step(name):
    r = resource.getrusage(resource.RUSAGE_SELF)
    _STEPS.append((name, time.thread_time_ns() // 1000, r.ru_minflt))


'''

CODE = r'''
import os, time, resource
r = resource.getrusage(resource.RUSAGE_SELF)
print(os.environ.get("AJ_STEPS", ""), "{}|%d|%d" % (time.thread_time_ns() // 1000, r.ru_minflt))
'''


def instrument(src):
    """src with a _step call before each checkpoint's line."""
    out = src.replace("# ---- one warm run's program ----\n", "# ---- one warm run's program ----\n\n" + PROBE, 1)
    if out == src:
        sys.exit("trace_program: zygote_program.py has no '# ---- one warm run's program ----' line")
    for i, (name, line) in enumerate(CHECKPOINTS):
        if out.count(line) != 1:
            sys.exit(f"trace_program: the line before which step {name!r} ends is not in zygote_program.py once: {line.strip()!r}")
        indent = line[:len(line) - len(line.lstrip())]
        call = f"{indent}_step({i})\n"
        if i == len(CHECKPOINTS) - 1:  # the last hands the figures to the program, in its environment
            call += f"{indent}os.environ['AJ_STEPS'] = ' '.join('%d|%d|%d' % s for s in _STEPS)\n"
        out = out.replace(line, call + line, 1)
    return out


def build(rev, d):
    subprocess.run(["git", "worktree", "add", "-q", "--detach", d, rev], check=True)
    path = os.path.join(d, "nsjail", "zygote_program.py")
    with open(path) as f:
        src = f.read()
    with open(path, "w") as f:
        f.write(instrument(src))
    binary = os.path.join(d, "agentjail-traced")
    subprocess.run(["go", "build", "-o", binary, "./cmd/agentjail"], cwd=d, check=True,
                   env={**os.environ, "PATH": "/usr/local/go/bin:" + os.environ.get("PATH", "")})
    return binary


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("--runs", type=int, default=200)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="trace-program-")
    d = os.path.join(tmp, "src")
    try:
        binary = build(a.rev, d)
        names = [n for n, _ in CHECKPOINTS] + ["the program's file read, compiled and run to its first line"]
        rows = collections.defaultdict(list)
        with benchlib.daemon(binary, 2) as (_, _, conn):
            for _ in range(a.runs):
                r = benchlib.post_run(conn, code=CODE, start="warm")
                prev = (0, 0)
                for item in r["stdout"].split():
                    i, t, f = item.split("|")
                    i = len(CHECKPOINTS) if i == "{}" else int(i)
                    t, f = int(t), int(f)
                    rows[i].append((t - prev[0], f - prev[1]))
                    prev = (t, f)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", d], check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    rev = subprocess.run(["git", "rev-parse", "--short", a.rev], capture_output=True, text=True).stdout.strip()
    print(f"{a.runs} kept-alive warm runs of a program that reads its figures first thing ({rev}); "
          f"the program's thread CPU and minor faults per step, median (`python3 scripts/benchmarks/trace_program.py`):\n")
    print("| step | CPU µs | page faults |")
    print("|---|---|---|")
    cpu = faults = 0
    for i, n in enumerate(names):
        c = statistics.median(x[0] for x in rows[i])
        f = statistics.median(x[1] for x in rows[i])
        cpu, faults = cpu + c, faults + f
        print(f"| {n} | {c:.0f} | {f:.0f} |")
    print(f"| **all** | **{cpu:.0f}** | **{faults:.0f}** |")


if __name__ == "__main__":
    main()
