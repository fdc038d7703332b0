"""A burst: `scripts/bench --burst` (issue 36).

Real loads are bursty: a reinforcement-learning step submits thousands of
programs, then trains. Two daemons of the same binary are up at once, one
with the default `jail.warm_ahead` (builds warm runs ahead of requests),
one with `jail.warm_ahead = 0` (builds each warm run on its request). In
turn, each is left idle for a minute (IDLE_S), then gets BURST programs
at once: BURST client threads, each with a connection opened before, all
released by one barrier, each posting one program with `"start":
"warm"`. The programs are the corpus's (scripts/benchmarks/corpus/, the endless
loop left out), cycled. Figures per burst: the time from the barrier to
the last result, to the median result, and the machine's CPU per program
from the kernel's counters (scripts/benchmarks/kernelcpu.py). Stdlib only; as root.
"""
import contextlib, os, statistics, threading, time

import benchlib, bench_throughput as bt, kernelcpu

BURST = 500
IDLE_S = 60.0
SIDES = (("warm_ahead default (max_concurrent)", ""), ("warm_ahead = 0", "[jail]\nwarm_ahead = 0\n"))


def burst(sock, programs, n, meter, krate):
    conns = [benchlib.UnixHTTP(sock) for _ in range(n)]
    for c in conns:
        c.connect()
    bar = threading.Barrier(n + 1)
    done, bad, lock = [], [], threading.Lock()

    def one(i):
        name, code, exp = programs[i % len(programs)]
        bar.wait()
        status, res = benchlib.post(conns[i], {"code": code, "start": "warm", "limits": {"wall_time_ms": 10000}})
        t = time.perf_counter()
        o = bt.result_outcome(res) if status == 200 else f"HTTP {status}"
        with lock:
            done.append(t)
            if o != exp:
                bad.append((name, exp, o))

    ths = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for th in ths:
        th.start()
    k0 = meter.sample() if meter else None
    t0 = time.perf_counter()
    bar.wait()
    for th in ths:
        th.join()
    time.sleep(0.3)
    kern = kernelcpu.Meter.delta(k0, meter.sample(), krate)["ours"] / n if meter else float("nan")
    for c in conns:
        c.close()
    done.sort()
    return {"last": done[-1] - t0, "median": done[len(done) // 2] - t0, "cpu": kern, "bad": bad}


def main(binary, quick):
    rounds = 1 if quick else 3
    n = 100 if quick else BURST
    idle = 10.0 if quick else IDLE_S
    programs = [p for p in bt.load_corpus() if p[2] != "timeout"]
    try:
        meter = kernelcpu.Meter()
    except OSError as e:
        meter = None
        print(f"(the kernel's CPU counters are n/a: {e})")
    ds = []
    with contextlib.ExitStack() as stack:  # its callbacks run last first
        if meter:
            stack.callback(meter.close)
        for label, extra in SIDES:
            srv, sock, conn = stack.enter_context(benchlib.daemon(binary, os.cpu_count(), extra, None, queue_length=n + 16))
            conn.close()
            ds.append((label, srv, sock))
        got = {label: [] for label, *_ in ds}
        for i in range(rounds):
            for label, srv, sock in (ds if i % 2 == 0 else ds[::-1]):
                krate = 0.0
                if meter:
                    krate = meter.idle_kthreads(1.0)
                time.sleep(max(idle - 1.0, 0))
                got[label].append(burst(sock, programs, n, meter, krate))
        print(f"A burst of {n} corpus programs at once (`\"start\": \"warm\"`, each on a connection of its own) "
              f"after {idle:.0f} s idle; {rounds} bursts per side, in turn; both daemons up throughout, "
              f"`max_concurrent` {os.cpu_count()}, `queue_length` {n + 16}. Load at the end: "
              f"{open('/proc/loadavg').read().strip()}.")
        print()
        print("| daemon | time to the last result, s | to the median result, s | machine CPU per program, ms (kernel counters) |")
        print("|---|---|---|---|")
        for label, *_ in ds:
            v = got[label]
            f = lambda k, fmt: f"{fmt % statistics.median(x[k] for x in v)} ({', '.join(fmt % x[k] for x in v)})"
            print(f"| {label} | {f('last', '%.2f')} | {f('median', '%.2f')} | {f('cpu', '%.2f')} |")
        print()
        if len(got[ds[0][0]]) and len(got[ds[1][0]]):
            r = statistics.median(a["last"] / b["last"] for a, b in zip(got[ds[0][0]], got[ds[1][0]]))
            print(f"Time to the last result, warm_ahead on ÷ off (each round's pair): {r:.3f}.")
        bad = [(label, x) for label, v in got.items() for b in v for x in b["bad"]]
        print("Every program gave its expected outcome." if not bad else
              "**Outcomes other than expected:** " + "; ".join(f"{lb}: `{n_}` expected {e}, got {o}" for lb, (n_, e, o) in bad[:10]))
        print()
