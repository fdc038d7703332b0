#!/usr/bin/env python3
"""agentjail benchmark, streamed output (issue 34): how soon a line a
program prints reaches a client that asked for the stream.

    sudo scripts/bench_stream.py --bin bin/agentjail [--n 20]

Against one daemon started here, n streamed runs (POST /v1/run with
"stream": true, a fresh connection each) of a program that prints the
wall clock (CLOCK_REALTIME, which no namespace changes) at its start,
then again after 300 ms, then sleeps 300 ms more. For each printed line:
the time from its print to the arrival of the event that carries it,
read on this side's clock. Reported: the median and the worst of the
first line's (the target: under 100 ms) and of the line printed in the
middle of the run. Stdlib only; the daemon helpers are bench.py's.
"""
import argparse, json, os, statistics, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import UnixHTTP, header, start_daemon, stop_daemon  # noqa: E402

PROGRAM = """import time
print(repr(time.time()), flush=True)
time.sleep(0.3)
print(repr(time.time()), flush=True)
time.sleep(0.3)
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
    if result is None or result["status"] != "ok" or len(delays) != 2:
        sys.exit(f"bench: unexpected run: {result and result['status']}, {len(delays)} lines")
    return delays


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="bin/agentjail")
    ap.add_argument("--n", type=int, default=20)
    a = ap.parse_args()
    srv, sock, conn = start_daemon(a.bin, 2)
    try:
        conn.close()
        one(sock)  # warm up
        runs = [one(sock) for _ in range(a.n)]
    finally:
        stop_daemon(srv, sock)
    header(a.bin, " ".join(sys.argv), f"{a.n} streamed runs")
    for i, what in enumerate(["first line (at the start)", "line printed 300 ms in"]):
        v = sorted(d[i] for d in runs)
        print(f"- {what}: print to event median {statistics.median(v):.1f} ms, worst {v[-1]:.1f} ms")
    worst_first = max(d[0] for d in runs)
    print(f"- first event within 100 ms of its print: {'yes' if worst_first < 100 else 'NO'} (worst {worst_first:.1f} ms)")


if __name__ == "__main__":
    main()
