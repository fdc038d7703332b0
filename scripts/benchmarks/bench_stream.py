#!/usr/bin/env python3
"""agentjail benchmark, streamed output (issue 34): how soon a line a
program prints reaches a client that asked for the stream.

    sudo scripts/benchmarks/bench_stream.py --bin bin/agentjail [--n 20]
    sudo scripts/bench --mcp     # this, agentjail mcp and display in one run

Against one daemon started here, n streamed runs (POST /v1/run with
"stream": true, a fresh connection each) of a program that prints the
wall clock (CLOCK_REALTIME, which no namespace changes) every 100 ms for
2 s: 20 lines. For each printed line: the time from its print to the
arrival of the event that carries it, read on this side's clock.
Reported: the median and the worst of the first line's (the target: the
median under 100 ms), and of every line's. Stdlib only; the daemon
helpers are benchlib.py's.
"""
import json, os, statistics, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import UnixHTTP, daemon, pct, run_by_hand  # noqa: E402

LINES = 20
PROGRAM = f"""import time
for _ in range({LINES}):
    print(repr(time.time()), flush=True)
    time.sleep(0.1)
"""


def one(sock):
    """One streamed run: the delays (ms) from each line's print to its
    event's arrival, in order."""
    conn = UnixHTTP(sock)
    conn.request("POST", "/v1/run", json.dumps({"code": PROGRAM, "stream": True}),
                 {"Content-Type": "application/json"})
    r = conn.getresponse()
    if r.status != 200 or r.getheader("Content-Type") != "application/x-ndjson":
        sys.exit(f"bench: the daemon answered {r.status} {r.getheader('Content-Type')}: {r.read()[:300]!r}")
    delays, pending, result = [], "", None
    while True:
        line = r.readline()
        now = time.time()
        if not line:
            break
        e = json.loads(line)
        if e["event"] == "stdout":
            pending += e["data"]
            while "\n" in pending:
                printed, pending = pending.split("\n", 1)
                delays.append((now - float(printed)) * 1000)
        elif e["event"] == "result":
            result = e
        elif e["event"] == "error":
            sys.exit(f"bench: the stream failed: {e}")
    conn.close()
    if result is None or result["status"] != "ok" or len(delays) != LINES:
        sys.exit(f"bench: unexpected run: {result and result['status']}, {len(delays)} lines")
    return delays


def run(binary, n):
    """Prints the figures and the verdict (scripts/bench --mcp calls it)."""
    with daemon(binary, 2) as (srv, sock, conn):
        conn.close()
        one(sock)  # warm up
        runs = [one(sock) for _ in range(n)]
    first = sorted(d[0] for d in runs)
    every = sorted(x for d in runs for x in d)
    print(f"{n} streamed runs (POST /v1/run, `\"stream\": true`, a connection each) of a program that prints a line every "
          f"100 ms for 2 s; from each line's print to the arrival of its event:")
    print()
    print("| line | lines | median ms | p90 | worst |")
    print("|---|---|---|---|---|")
    print(f"| the first | {len(first)} | {statistics.median(first):.1f} | {pct(first, .9):.1f} | {first[-1]:.1f} |")
    print(f"| every line | {len(every)} | {statistics.median(every):.1f} | {pct(every, .9):.1f} | {every[-1]:.1f} |")
    print()
    m = statistics.median(first)
    print(f"The first event within 100 ms of its print, median of {n}: {'yes' if m < 100 else 'NO'} ({m:.1f} ms).")
    print()


if __name__ == "__main__":
    run_by_hand(run, "{n} streamed runs")
