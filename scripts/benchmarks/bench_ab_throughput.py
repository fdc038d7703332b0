#!/usr/bin/env python3
"""Two daemons side by side on the corpus (scripts/benchmarks/corpus/), for a change's
throughput before/after in BENCHMARKS.md: both up at once, each pass of
the corpus (scripts/benchmarks/bench_throughput.py's phase) alternating between
them, at 1 and then 2 clients. Each side is BINARY[@EXTRA_CONFIG[@ENV]]
(benchlib.parse_side). MODE=cold in this script's
environment sends "start": "cold" (default warm). Run as root:

    python3 scripts/benchmarks/bench_ab_throughput.py OLD_BINARY NEW_BINARY [ROUNDS]
    python3 scripts/benchmarks/bench_ab_throughput.py bin/agentjail@@ bin/agentjail@@GOMAXPROCS=1 6

Prints, per side and client count, the median programs/s (min-max), and
the medians of the machine's CPU (/proc/stat, everyone's), the daemon's
CPU, and, from the kernel's counters of this script's own cgroup
(scripts/benchmarks/kernelcpu.py: both daemons and their jails are in it, and each
pass runs one side), the side's processes' CPU per program ("procs") and
that plus the kernel threads less their idle rate ("+kthr"); then each
round's ratio new ÷ old of "procs" (the pairs ran side by side).
"""
import contextlib, sys, os, statistics
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib, bench_throughput as bt, kernelcpu
try:
    bt.KERNEL["meter"] = kernelcpu.Meter()
except OSError as e:
    print(f"the kernel's counters are n/a: {e}")
sides = sys.argv[1:3]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 4
progs = [p for p in bt.load_corpus() if p[2] != "timeout"]
with contextlib.ExitStack() as stack:  # its callbacks run last first
    if bt.KERNEL["meter"]:
        stack.callback(bt.KERNEL["meter"].close)
    ds = []
    for i, side in enumerate(sides):
        b, extra, env = benchlib.parse_side(side)
        srv, sock, conn = stack.enter_context(benchlib.daemon(b, os.cpu_count(), extra, env))
        ds.append(bt.Daemon(f"{i}:{os.path.basename(b)}{side[len(b):]}", b, srv, sock, os.environ.get("MODE", "warm")))
    for d in ds: bt.phase(d, progs, 2)
    fig = {(d.key, c): [] for d in ds for c in (1, 2)}
    nan = {"runner": float("nan"), "ours": float("nan")}
    for c in (1, 2):
        for i in range(rounds):
            if bt.KERNEL["meter"]:
                bt.KERNEL["rate"] = bt.KERNEL["meter"].idle_kthreads()
            for d in (ds if i % 2 == 0 else ds[::-1]):
                r = bt.phase(d, progs, c)
                k = r["kernel"] or nan
                fig[(d.key, c)].append((r["rate"], r["machine"], r["daemon"], k["runner"], k["ours"]))
    med = lambda v, j: statistics.median(x[j] for x in v)
    for c in (1, 2):
        for d in ds:
            v = fig[(d.key, c)]
            print(f"{c} client(s) {d.key:40s} rate {med(v, 0):6.1f} ({min(x[0] for x in v):.0f}-{max(x[0] for x in v):.0f})  machine ms {med(v, 1):5.2f}  daemon ms {med(v, 2):5.2f}  procs ms {med(v, 3):5.2f}  +kthr ms {med(v, 4):5.2f}", flush=True)
        a, b = fig[(ds[0].key, c)], fig[(ds[1].key, c)]
        rs = sorted(y[3] / x[3] for x, y in zip(a, b))
        print(f"{c} client(s) procs new/old per round: " + " ".join("%.3f" % x for x in rs) + f"  median {statistics.median(rs):.3f}", flush=True)
    print("load: " + open("/proc/loadavg").read().strip())
