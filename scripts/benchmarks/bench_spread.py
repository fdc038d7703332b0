#!/usr/bin/env python3
"""How well the Python client spreads runs over many nodes (issue 32).

Starts two daemons on this machine (bin/agentjail, or $AGENTJAIL_BIN),
each with max_concurrent = 2 and a plain-HTTP [remote] listener on
127.0.0.1, and measures runs per second of a workload of programs that
sleep 200 ms, with W asyncio workers each sending one run after the other
for a fixed window (runs still going at its end are cancelled, not
counted):

1. the client over both nodes vs over one (target: >= 1.8x);
2. with node A's two slots taken by long runs (from its Unix socket),
   the client over both nodes vs over the free node B alone
   (target: >= 0.9x).

Sleeping programs keep the figures meaningful on a small shared machine:
the jails wait, they do not compete for CPU. As root:

    /usr/bin/python3 scripts/benchmarks/bench_spread.py [--window 8] [--workers 12]
"""

import argparse
import asyncio
import contextlib
import os
import socket
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
import agentjail  # noqa: E402
import benchlib  # noqa: E402 (beside this script)

TOKEN = "bench-" + os.urandom(8).hex()
SLEEP = "import time; time.sleep(0.2)"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node(stack, binary, name, k):
    """A daemon named name that listens on a TCP port of loopback as well
    as its socket, the benchmark's token in its tokens file: benchlib's
    daemon, stopped when stack closes. Returns (its URL, its socket)."""
    port = free_port()
    tokens = os.path.join(stack.enter_context(tempfile.TemporaryDirectory(prefix="ajbench-")), "tokens")
    with open(tokens, "w") as f:
        f.write(f"bench {TOKEN}\n")
    os.chmod(tokens, 0o600)
    _, sock, _ = stack.enter_context(benchlib.daemon(binary, 2, f"""[remote]
listen = "127.0.0.1:{port}"
tokens_file = "{tokens}"
node = "{name}"
insecure_plaintext = true

[limits.max]
wall_time_ms = 300000

[jail]
uid_base = {2_200_000_000 + k * 100_000}
uid_count = 1000
"""))
    return f"http://127.0.0.1:{port}", sock


async def throughput(urls, workers, window):
    """Runs per second finished within the window, and where they ran."""
    client = agentjail.AsyncClient(urls=urls, token=TOKEN, timeout=120)
    done = []
    end = time.monotonic() + window

    async def worker():
        while time.monotonic() < end:
            r = await client.run(SLEEP)
            if time.monotonic() <= end:
                done.append(r.node)

    tasks = [asyncio.ensure_future(worker()) for _ in range(workers)]
    await asyncio.sleep(window)
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    by = {n: done.count(n) for n in sorted(set(done))}
    return len(done) / window, by


def occupy(sock, seconds, n=2):
    """n long runs on a daemon's Unix socket, in threads; returns them."""
    def one():
        try:
            agentjail.Client(sock, timeout=seconds + 30).run(
                f"import time; time.sleep({seconds})", limits={"wall_time_ms": int(seconds * 1000) + 20000})
        except agentjail.AgentjailError:
            pass
    ts = [threading.Thread(target=one, daemon=True) for _ in range(n)]
    for t in ts:
        t.start()
    deadline = time.monotonic() + 10
    while agentjail.Client(sock, timeout=5).health().get("running", 0) < n:
        if time.monotonic() > deadline:
            raise SystemExit("the long runs did not start")
        time.sleep(0.05)
    return ts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--window", type=float, default=8.0, help="seconds each measurement lasts")
    ap.add_argument("--workers", type=int, default=12, help="runs in flight at once")
    args = ap.parse_args()
    binary = os.environ.get("AGENTJAIL_BIN") or os.path.join(ROOT, "bin", "agentjail")
    with contextlib.ExitStack() as stack:
        a_url, a_sock = node(stack, binary, "alpha", 1)
        b_url, _ = node(stack, binary, "beta", 2)
        asyncio.run(throughput([a_url, b_url], 4, 2.0))  # warm-up
        one, by1 = asyncio.run(throughput([a_url], args.workers, args.window))
        both, by2 = asyncio.run(throughput([a_url, b_url], args.workers, args.window))
        print(f"1. idle nodes, {args.workers} workers, {args.window:g} s, runs of 200 ms sleep:")
        print(f"   one node:   {one:6.2f} runs/s  {by1}")
        print(f"   both nodes: {both:6.2f} runs/s  {by2}")
        print(f"   ratio {both / one:.2f}x (target >= 1.8x)")
        long_runs = occupy(a_sock, 3 * args.window + 20)
        alone, by3 = asyncio.run(throughput([b_url], args.workers, args.window))
        mixed, by4 = asyncio.run(throughput([a_url, b_url], args.workers, args.window))
        print("2. node alpha's 2 slots taken by long runs:")
        print(f"   beta alone: {alone:6.2f} runs/s  {by3}")
        print(f"   both nodes: {mixed:6.2f} runs/s  {by4}")
        print(f"   ratio {mixed / alone:.2f}x (target >= 0.9x)")
        del long_runs

if __name__ == "__main__":
    main()
