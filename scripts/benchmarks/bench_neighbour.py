#!/usr/bin/env python3
"""How long light runs wait beside an output-heavy neighbour: one client
runs `pass` (kept-alive, 5 ms apart) while another runs, back to back,
programs that print SIZE bytes (with output_bytes raised to fit). Two
daemons, each side BINARY[@EXTRA_CONFIG[@ENV]] (benchlib.parse_side), take
turns round by round, so that the host's drift hits both alike. Run as root; prints a Markdown
table of the light runs' latency percentiles and the heavy runs' median:

    python3 scripts/benchmarks/bench_neighbour.py bin/agentjail@@GOMAXPROCS=1 bin/agentjail@@GOMAXPROCS=2 \\
        [--rounds 3] [--runs 150] [--size 16000000]
"""
import argparse, contextlib, os, statistics, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sides", nargs=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=150, help="light runs per side and round")
    ap.add_argument("--size", type=int, default=16_000_000, help="bytes each heavy run prints")
    a = ap.parse_args()
    heavy = f"import sys; sys.stdout.write('x'*{a.size})"
    with contextlib.ExitStack() as stack:
        ds = {}
        for s in a.sides:
            binary, extra, env = benchlib.parse_side(s)
            ds[s] = stack.enter_context(benchlib.daemon(binary, 4, extra, env))
        light = {s: [] for s in ds}
        heavy_ms = {s: [] for s in ds}
        for _ in range(a.rounds):
            for s, (_, sock, conn) in ds.items():
                stop, failed = threading.Event(), []

                def neighbour():
                    c = benchlib.UnixHTTP(sock)
                    while not stop.is_set():
                        t = time.perf_counter()
                        out = benchlib.post_run(c, heavy, limits={"output_bytes": a.size + 1024})
                        if len(out["stdout"]) != a.size:
                            failed.append(f"a heavy run printed {len(out['stdout'])} bytes ({out.get('status')})")
                            return
                        heavy_ms[s].append((time.perf_counter() - t) * 1000)

                th = threading.Thread(target=neighbour)
                th.start()
                time.sleep(0.3)
                for _ in range(a.runs):
                    t = time.perf_counter()
                    benchlib.post_run(conn, "pass")
                    light[s].append((time.perf_counter() - t) * 1000)
                    time.sleep(0.005)
                stop.set()
                th.join()
                if failed:
                    sys.exit("bench_neighbour: " + failed[0])
    print(f"Light kept-alive `pass` runs beside a client printing {a.size} bytes per run, {a.rounds} rounds:")
    print()
    print("| daemon | light runs | p50 ms | p90 | p99 | max | heavy runs: median ms (count) |")
    print("|---|---|---|---|---|---|---|")
    for s, v in light.items():
        v.sort()

        def q(p):
            return v[min(len(v) - 1, int(p * len(v)))]
        print(f"| {s} | {len(v)} | {q(0.5):.2f} | {q(0.9):.2f} | {q(0.99):.2f} | {v[-1]:.2f} | "
              f"{statistics.median(heavy_ms[s]):.1f} ({len(heavy_ms[s])}) |")


if __name__ == "__main__":
    main()
