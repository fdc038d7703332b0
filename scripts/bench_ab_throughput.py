#!/usr/bin/env python3
"""Two daemons side by side on the corpus (scripts/corpus/), for a change's
throughput before/after in BENCHMARKS.md: both up at once, each pass of
the corpus (scripts/bench_throughput.py's phase) alternating between
them, at 1 and then 2 clients. Each side is BINARY[@EXTRA_CONFIG[@ENV]]
(bench.parse_side). MODE=cold in this script's
environment sends "start": "cold" (default warm). Run as root:

    python3 scripts/bench_ab_throughput.py OLD_BINARY NEW_BINARY [ROUNDS]
    python3 scripts/bench_ab_throughput.py bin/agentjail@@ bin/agentjail@@GOMAXPROCS=1 6

Prints, per side and client count, the median programs/s (min-max), and
the medians of the machine's CPU and the daemon's CPU per program.
"""
import sys, os, statistics
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench, bench_throughput as bt
sides = sys.argv[1:3]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 4
progs = [p for p in bt.load_corpus() if p[2] != "timeout"]
ds = []
for i, side in enumerate(sides):
    b, extra, env = bench.parse_side(side)
    srv, sock, conn = bench.start_daemon(b, os.cpu_count(), extra, env)
    ds.append(bt.Daemon(f"{i}:{os.path.basename(b)}{side[len(b):]}", b, srv, sock, os.environ.get("MODE", "warm")))
try:
    for d in ds: bt.phase(d, progs, 2)
    fig = {(d.key, c): [] for d in ds for c in (1, 2)}
    for c in (1, 2):
        for i in range(rounds):
            for d in (ds if i % 2 == 0 else ds[::-1]):
                r = bt.phase(d, progs, c)
                fig[(d.key, c)].append((r["rate"], r["machine"], r["daemon"]))
    for c in (1, 2):
        for d in ds:
            v = fig[(d.key, c)]
            print(f"{c} client(s) {d.key:40s} rate {statistics.median(x[0] for x in v):6.1f} ({min(x[0] for x in v):.0f}-{max(x[0] for x in v):.0f})  machine ms {statistics.median(x[1] for x in v):5.2f}  daemon ms {statistics.median(x[2] for x in v):5.2f}", flush=True)
finally:
    for d in ds: bench.stop_daemon(d.srv, d.sock)
