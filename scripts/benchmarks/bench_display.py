#!/usr/bin/env python3
"""agentjail benchmark, display (issue 34): a program that plots.

    sudo scripts/benchmarks/bench_display.py --bin bin/agentjail [--n 20]
    sudo scripts/bench --mcp     # this, agentjail mcp and streaming in one run

Against one daemon started here whose default environment preloads
matplotlib.pyplot, n runs each, interleaved (cold, warm, warm pass; the
order turned each round), of a program that draws a 1,000-point line
chart and shows it: its figure comes back in the result's display as a
PNG. Cold starts a fresh interpreter, which imports matplotlib; warm forks
the zygote, which has it. A warm `pass` on the same daemon is the
reference row. Needs Debian's python3-matplotlib (scripts/deps
--scientific). Stdlib only; the daemon helpers are benchlib.py's.
"""
import contextlib, os, statistics, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import DaemonFailed, daemon, pct, post_run, run_by_hand  # noqa: E402

PLOT = """import matplotlib.pyplot as plt
plt.plot(range(1000), [(i * 37) % 101 for i in range(1000)])
plt.show()
"""
PRELOAD = '[environments.default]\npreload = ["matplotlib.pyplot"]\n'


def run(binary, n):
    """Prints the table and the ratio (scripts/bench --mcp calls it)."""
    sides = {"plot, cold": (PLOT, "cold"), "plot, warm (matplotlib preloaded)": (PLOT, "warm"), "`pass`, warm": ("pass", "warm")}
    got = {k: [] for k in sides}
    with contextlib.ExitStack() as stack:
        try:
            _, _, conn = stack.enter_context(daemon(binary, 2, PRELOAD, or_exit=False))
        except DaemonFailed as e:
            print(f"Display: n/a: the daemon refuses to preload matplotlib.pyplot (is python3-matplotlib installed?): {e}")
            print()
            return
        for k, (code, start) in sides.items():  # warm up each side
            post_run(conn, code, start, limits={"wall_time_ms": 120_000, "cpu_time_ms": 60_000})
        order = list(sides)
        for i in range(n):
            for k in (order if i % 2 == 0 else order[::-1]):
                code, start = sides[k]
                time.sleep(0.05)
                t = time.perf_counter()
                # A cold plot takes seconds on a loaded machine: past the
                # default wall limit (10 s) it would be killed.
                res = post_run(conn, code, start, limits={"wall_time_ms": 120_000, "cpu_time_ms": 60_000})
                wall = (time.perf_counter() - t) * 1000
                if res["status"] != "ok" or res.get("start") != start:
                    sys.exit(f"bench: {k}: {res['status']} {res.get('kill_reason')} start={res.get('start')}: {res['stderr'][-500:]}")
                shown = res.get("display") or []
                if code == PLOT and [d["mime"] for d in shown] != ["image/png"]:
                    sys.exit(f"bench: {k}: display {[d['mime'] for d in shown]}, not one PNG")
                got[k].append((wall, res["cpu_time_ms"], shown[0]["bytes"] if shown else 0))
    print(f"A 1,000-point line chart, `plt.show()`, its PNG in `display`; through the daemon, kept-alive, {n} runs of each side, "
          "interleaved; the daemon's default environment preloads `matplotlib.pyplot`:")
    print()
    print("| run | client wall, median ms | p10 | p90 | jail's `cpu_time_ms`, median | PNG bytes |")
    print("|---|---|---|---|---|---|")
    for k, v in got.items():
        w = [x[0] for x in v]
        print(f"| {k} | {statistics.median(w):.1f} | {pct(w, .1):.1f} | {pct(w, .9):.1f} | "
              f"{statistics.median(x[1] for x in v):.1f} | {v[0][2] or '—'} |")
    print()
    cold, warm = (statistics.median(x[0] for x in got[k]) for k in ("plot, cold", "plot, warm (matplotlib preloaded)"))
    ccold, cwarm = (statistics.median(x[1] for x in got[k]) for k in ("plot, cold", "plot, warm (matplotlib preloaded)"))
    print(f"Warm plot ÷ cold plot, client wall: **{warm / cold:.3f}** ({warm:.1f} against {cold:.1f} ms); "
          f"the jail's CPU, which the load inflates less: **{cwarm / ccold:.3f}** ({cwarm:.1f} against {ccold:.1f} ms).")
    print()


if __name__ == "__main__":
    run_by_hand(run, "{n} runs of each side")
