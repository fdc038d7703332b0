#!/usr/bin/env python3
"""Two agentjail binaries side by side, alternating, on this host (run as
root): the daemon's CPU and latency per kept-alive run of `pass` (both
daemons up at once, their runs interleaved with bare python3's), and local
mode's ratio to bare python3. For a change's before/after in BENCHMARKS.md:

    python3 scripts/bench_ab.py OLD_BINARY NEW_BINARY [--pairs 3]
"""
import argparse, os, random, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402


def daemons_interleaved(binaries, n=300, settle=0.02):
    """A daemon of each binary, up at once; then n rounds of bare python3
    and one kept-alive run of `pass` on each daemon in random order, each
    after a pause: the host's drift hits every side alike. Returns per binary (daemon CPU
    per run, median latency, ratio of medians to bare python3)."""
    ds = [bench.start_daemon(b, 2) for b in binaries]
    try:
        time.sleep(0.5)
        cpu0 = [bench.proc_cpu_ms(srv.pid) for srv, _, _ in ds]
        bare, lat = [], [[] for _ in ds]
        for _ in range(n):
            time.sleep(settle)
            bare.append(bench.timed([bench.PY, "-I", "-c", "pass"]))
            for i in random.sample(range(len(ds)), len(ds)):  # no side always first
                conn = ds[i][2]
                time.sleep(settle)
                t = time.perf_counter()
                bench.post_run(conn)
                lat[i].append((time.perf_counter() - t) * 1000)
        time.sleep(0.1)
        b = statistics.median(bare)
        return b, [((bench.proc_cpu_ms(srv.pid) - c0) / n, statistics.median(l), statistics.median(l) / b)
                   for (srv, _, _), c0, l in zip(ds, cpu0, lat)]
    finally:
        for srv, sock, _ in ds:
            bench.stop_daemon(srv, sock)


def local(binaries, n=150):
    """Median of `run -c pass` per binary, and of bare python3, interleaved."""
    res = {b: [] for b in binaries + [bench.PY]}
    for _ in range(n):
        for b in res:
            cmd = [b, "-I", "-c", "pass"] if b == bench.PY else [b, "run", "-c", "pass"]
            time.sleep(0.01)
            t = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            res[b].append((time.perf_counter() - t) * 1000)
    return {b: statistics.median(v) for b, v in res.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--pairs", type=int, default=3)
    a = ap.parse_args()
    print("| round | binary | daemon CPU per run | kept-alive `pass`, median | ratio to bare python3 |")
    print("|---|---|---|---|---|")
    for r in range(a.pairs):
        order = [a.old, a.new] if r % 2 == 0 else [a.new, a.old]
        bare, res = daemons_interleaved(order)
        print(f"| {r + 1} | bare `python3 -I -c pass` | | {bare:.2f} ms | 1.00 |")
        for b, (cpu, lat, ratio) in sorted(zip(order, res), key=lambda x: x[0] != a.old):
            print(f"| {r + 1} | {b} | {cpu:.2f} ms | {lat:.2f} ms | {ratio:.2f} |", flush=True)
    m = local([a.old, a.new])
    print()
    print("| local mode | median ms | ratio to bare |")
    print("|---|---|---|")
    for b, v in m.items():
        print(f"| {b} | {v:.2f} | {v / m[bench.PY]:.2f} |")


if __name__ == "__main__":
    main()
