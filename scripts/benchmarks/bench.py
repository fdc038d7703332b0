"""The entry of scripts/bench: reads its flags, prints the Markdown header
and hands over to one runner module (bench_latency by default, or
bench_throughput, bench_burst, bench_sessions, bench_mcp with bench_stream
and bench_display, bench_egress). Imports go one way: this entry → the
runners → the helpers (benchlib.py, kernelcpu.py); no module imports this
one (internal/scriptstest checks it).

Stdlib only. Each figure is measured side by side with its baseline in the
same run, interleaved (bare, jail, bare, jail, ...), so that the machine's
drift hits both equally; ratios are what to compare across machines.
"""
import argparse, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import header  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--throughput", action="store_true",
                    help="issue 18's figures instead: the corpus through the daemon (cold, warm), plain python3 and a fork harness; "
                         "daemon CPU per run cold and warm; import numpy cold and warm; cold imports")
    ap.add_argument("--preload-numpy", action="store_true",
                    help="with --throughput: the import numpy row on a daemon whose default environment preloads numpy")
    ap.add_argument("--burst", action="store_true",
                    help="issue 36's burst instead: 500 programs at once after an idle minute, jail.warm_ahead on and off")
    ap.add_argument("--sessions", action="store_true",
                    help="issue 19's figures instead: a call in a live session against the client's round trip, "
                         "session start warm and cold, the daemon's cost per idle session")
    ap.add_argument("--mcp", action="store_true",
                    help="issue 34's figures instead: warm `pass` through agentjail mcp against the daemon directly, "
                         "streamed output's first event, a warm plot against a cold one")
    ap.add_argument("--egress", action="store_true",
                    help="issue 33's figures instead: warm pass with a network policy against without (machine CPU per run), "
                         "a 256 MiB download through the proxy against directly (needs root: network namespaces)")
    a = ap.parse_args()
    flags = "".join(f" --{f}" for f, on in (("throughput", a.throughput), ("sessions", a.sessions), ("mcp", a.mcp), ("egress", a.egress),
                                             ("burst", a.burst), ("quick", a.quick),
                                             ("preload-numpy", a.preload_numpy)) if on)
    if a.egress:
        import bench_egress
        header(a.bin, f"scripts/bench{flags}", "each figure side by side with its baseline in the same run")
        bench_egress.main(a.bin, a.quick)
        return
    if a.mcp:
        import bench_display, bench_mcp, bench_stream
        binary = os.path.abspath(a.bin)
        load = open("/proc/loadavg").read().split()[:3]
        header(binary, f"scripts/bench{flags}", f"each figure side by side with its baseline in the same run; load average at the start {' '.join(load)}")
        bench_mcp.run(binary, 100 if a.quick else 500, 20)
        print()
        bench_stream.run(binary, 20)
        bench_display.run(binary, 6 if a.quick else 20)
        print(f"Load average at the end: {' '.join(open('/proc/loadavg').read().split()[:3])}.")
        return
    if a.sessions:
        import bench_sessions
        header(a.bin, f"scripts/bench{flags}", "each figure side by side with its baseline in the same run")
        bench_sessions.main(a.bin, a.quick)
        return
    if a.burst:
        import bench_burst
        header(a.bin, f"scripts/bench{flags}", "the two daemons up at once, their bursts in turn")
        bench_burst.main(a.bin, a.quick)
        return
    if a.throughput:
        import bench_throughput
        header(a.bin, f"scripts/bench{flags}", "each figure side by side with its baselines in the same run")
        bench_throughput.main(a.bin, a.quick, a.preload_numpy)
        return
    import bench_latency
    n, reps = (40, 1) if a.quick else (200, 3)
    header(a.bin, f"scripts/bench{flags}", f"{n} interleaved runs of each side; peaks are medians of {reps}")
    bench_latency.main(a.bin, n, reps, 100 if a.quick else 300)


if __name__ == "__main__":
    main()
