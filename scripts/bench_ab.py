#!/usr/bin/env python3
"""Two agentjail binaries side by side, alternating, on this host (run as
root): the daemon's CPU and latency per kept-alive run of `pass`, and local
mode's ratio to bare python3. For a change's before/after in BENCHMARKS.md:

    python3 scripts/bench_ab.py OLD_BINARY NEW_BINARY [--pairs 3]
"""
import argparse, os, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402


def daemon_cpu(binary, n=300, settle=0.02):
    """Daemon CPU (utime+stime) per run and median latency of n runs of
    `pass`, each after a pause (the replacement of the prepared jail used
    lands in the pause, and in the CPU figure)."""
    srv, sock, conn = bench.start_daemon(binary, 2)
    try:
        time.sleep(0.5)
        cpu0, lat = bench.proc_cpu_ms(srv.pid), []
        for _ in range(n):
            time.sleep(settle)
            t = time.perf_counter()
            bench.post_run(conn)
            lat.append((time.perf_counter() - t) * 1000)
        time.sleep(0.1)
        return (bench.proc_cpu_ms(srv.pid) - cpu0) / n, statistics.median(lat)
    finally:
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
    print("| binary | daemon CPU per run | kept-alive `pass`, median |")
    print("|---|---|---|")
    for _ in range(a.pairs):
        for b in (a.old, a.new):
            cpu, lat = daemon_cpu(b)
            print(f"| {b} | {cpu:.2f} ms | {lat:.2f} ms |", flush=True)
    m = local([a.old, a.new])
    print()
    print("| local mode | median ms | ratio to bare |")
    print("|---|---|---|")
    for b, v in m.items():
        print(f"| {b} | {v:.2f} | {v / m[bench.PY]:.2f} |")


if __name__ == "__main__":
    main()
