#!/usr/bin/env python3
"""Two agentjail binaries side by side, alternating, on this host (run as
root): the daemon's CPU and latency per kept-alive run of an empty program
(both daemons up at once, their runs interleaved with bare python3's, split
at python3's first line of user code), and local mode's ratio to bare
python3. For a change's before/after in BENCHMARKS.md:

    python3 scripts/benchmarks/bench_ab.py OLD_BINARY NEW_BINARY [--rounds 3]

--rounds: each round starts both daemons and runs 300 of each.
"""
import argparse, contextlib, os, random, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


# The program prints CLOCK_MONOTONIC at its first line, which splits a
# run's time at python3's first instruction of user code: what the jail
# adds before it (the request's way in, set-up, exec) and after it (exit,
# clean-up, the answer). Importing the builtin time module costs
# microseconds.
STAMP = "import time;print(time.clock_gettime_ns(time.CLOCK_MONOTONIC))"


def split(t0, stamp, t1):
    return (stamp - t0) / 1e6, (t1 - stamp) / 1e6


def daemons_interleaved(binaries, n=300, settle=0.02):
    """A daemon of each binary, up at once; then n rounds of bare python3
    and one kept-alive run on each daemon in random order, each after a
    pause: the host's drift hits every side alike. Returns bare python3's
    (median total, before, after its first line) and per binary (daemon
    CPU per run, median total, before, after)."""
    with contextlib.ExitStack() as stack:
        ds = [stack.enter_context(benchlib.daemon(b, 2)) for b in binaries]
        mono = time.clock_gettime_ns
        time.sleep(0.5)
        cpu0 = [benchlib.proc_cpu_ms(srv.pid) for srv, _, _ in ds]
        bare, runs = [], [[] for _ in ds]
        for _ in range(n):
            time.sleep(settle)
            t0 = mono(time.CLOCK_MONOTONIC)
            p = subprocess.run([benchlib.PY, "-I", "-c", STAMP], capture_output=True, check=True)
            bare.append(split(t0, int(p.stdout), mono(time.CLOCK_MONOTONIC)))
            for i in random.sample(range(len(ds)), len(ds)):  # no side always first
                time.sleep(settle)
                t0 = mono(time.CLOCK_MONOTONIC)
                res = benchlib.post_run(ds[i][2], STAMP)
                runs[i].append(split(t0, int(res["stdout"]), mono(time.CLOCK_MONOTONIC)))
        time.sleep(0.1)

        def medians(v):
            return (statistics.median(a + b for a, b in v), statistics.median(a for a, _ in v), statistics.median(b for _, b in v))
        return medians(bare), [((benchlib.proc_cpu_ms(srv.pid) - c0) / n, *medians(v))
                               for (srv, _, _), c0, v in zip(ds, cpu0, runs)]


def local(binaries, n=150):
    """Median of `run -c pass` per binary, and of bare python3, interleaved."""
    res = {b: [] for b in binaries + [benchlib.PY]}
    for _ in range(n):
        for b in res:
            cmd = [b, "-I", "-c", "pass"] if b == benchlib.PY else [b, "run", "-c", "pass"]
            time.sleep(0.01)
            t = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            res[b].append((time.perf_counter() - t) * 1000)
    return {b: statistics.median(v) for b, v in res.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    print("| round | binary | daemon CPU per run | kept-alive run, median | ratio to bare | before python's first line | after it |")
    print("|---|---|---|---|---|---|---|")
    for r in range(a.rounds):
        (bare, b0, b1), res = daemons_interleaved([a.old, a.new])
        print(f"| {r + 1} | bare `python3 -I -c …` | | {bare:.2f} ms | 1.00 | {b0:.2f} ms | {b1:.2f} ms |")
        for b, (cpu, tot, t0, t1) in zip([a.old, a.new], res):
            print(f"| {r + 1} | {b} | {cpu:.2f} ms | {tot:.2f} ms | {tot / bare:.2f} | {t0:.2f} ms | {t1:.2f} ms |", flush=True)
    m = local([a.old, a.new])
    print()
    print("| local mode | median ms | ratio to bare |")
    print("|---|---|---|")
    for b, v in m.items():
        print(f"| {b} | {v:.2f} | {v / m[benchlib.PY]:.2f} |")


if __name__ == "__main__":
    main()
