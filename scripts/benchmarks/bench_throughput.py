"""The throughput benchmark of issue 18 (warm runs): `scripts/bench --throughput`.

Stdlib only. Four runners, side by side in one run, interleaved (each round
runs the whole corpus through every runner, in an order that rotates from
round to round), at 1 and 2 concurrent clients:

- the agentjail daemon, `"start": "cold"`;
- the agentjail daemon, `"start": "warm"` (n/a while the daemon answers 400);
- plain `python3 -I -c CODE`, a process per program, no isolation;
- a fork of a warm interpreter + exec per program (scripts/benchmarks/forkharness.py),
  what the code benchmarks' own harnesses do; no isolation.

Per runner: programs per second, and the machine's CPU per program (all
CPUs' busy time in /proc/stat over the pass, divided by the programs run:
the daemon, the jails, the harness, this client, the kernel's threads and
anyone else on the host; a second column leaves out the processes outside
this benchmark's tree, and a table splits it further). Then the same from
the kernel's counters of this benchmark's own cgroup and the kernel
threads (scripts/benchmarks/kernelcpu.py), the isolation floor beside it
(scripts/benchmarks/bench_floor.py) and each runner's CPU per program ÷ the floor
(issue 36). Then `import numpy`
cold and warm through the daemon, and cold imports of numpy, pandas and
matplotlib in a jail against plain python3.
"""
import contextlib, glob, json, os, re, resource, statistics, subprocess, threading, time

import benchlib
import bench_floor, kernelcpu

# The kernel's counters of this benchmark's own cgroup (scripts/benchmarks/kernelcpu.py),
# set up by main (None where they cannot be: then the columns say n/a), and
# the kernel threads' idle rate measured before each round.
KERNEL = {"meter": None, "rate": 0.0}

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
TIMEOUT_S = 2.0  # every runner's wall limit; the corpus's endless loop meets it
TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def load_corpus():
    """[(name, code, expected outcome)]: "ok", an exception class, or "timeout"."""
    progs = []
    for f in sorted(glob.glob(os.path.join(CORPUS, "*.py"))):
        code = open(f).read()
        exp = re.match(r"# expect: (\S+)", code).group(1)
        progs.append((os.path.basename(f)[:-3], code, "ok" if exp == "print" else exp))
    return progs


def proc_times():
    """{pid: (ppid, kernel thread?, start time, utime+stime ms, cutime+cstime ms)} of every process."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                f = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            out[int(d)] = (int(f[1]), int(f[6]) & 0x200000 != 0, f[19],
                           (int(f[11]) + int(f[12])) * TICK_MS, (int(f[13]) + int(f[14])) * TICK_MS)
    return out


def split(a, b, daemon):
    """The CPU every process took between the scans a and b (ms), by whose
    it is: "client" (this process), "daemon" (its own), "programs" (every
    other process of this benchmark's tree: python3 children, fork servers,
    jails, zygotes, whoever reaps them), "kthreads" (kernel threads, anyone's)
    and "other" (processes outside the tree: other tenants). A process's
    share is its own time and its reaped children's; one that started in
    between counts whole; one that ended in between is in its parent's
    reaped children's time, less what it had taken before a. (Kernel
    threads that ended are lost: nobody reaps them.)"""
    parent = {pid: v[0] for s in (a, b) for pid, v in s.items()}
    me, tree = os.getpid(), {}

    def ours(pid):
        if pid not in tree:
            tree[pid] = pid == me or (pid in parent and parent[pid] > 1 and ours(parent[pid]))
        return tree[pid]

    def kind(pid, kthread):
        return "kthreads" if kthread else "programs" if ours(pid) else "other"

    out = dict.fromkeys(("client", "daemon", "programs", "kthreads", "other"), 0.0)
    for pid, (_, kthread, start, own, kids) in b.items():
        same = pid in a and a[pid][2] == start
        d_own, d_kids = (own - a[pid][3], kids - a[pid][4]) if same else (own, kids)
        out["client" if pid == me else "daemon" if pid == daemon else kind(pid, kthread)] += d_own
        out[kind(pid, kthread)] += d_kids
    for pid, (_, kthread, start, own, kids) in a.items():
        if not kthread and (pid not in b or b[pid][2] != start):
            out[kind(pid, kthread)] -= own + kids
    return out


def stderr_outcome(rc, stderr):
    """A python3's outcome from its exit status and the last line of its traceback."""
    if rc == 0:
        return "ok"
    lines = stderr.strip().splitlines()
    m = re.match(r"([A-Za-z_][\w.]*)(:|$)", lines[-1]) if lines else None
    if rc == 1 and m:
        return m.group(1).rsplit(".", 1)[-1]
    return f"exit {rc}" if rc > 0 else f"signal {-rc}"


def result_outcome(res):
    """A daemon result's outcome, in the same words."""
    st = res["status"]
    if st == "ok":
        return "ok"
    if st == "killed" and res["kill_reason"] == "wall_timeout":
        return "timeout"
    if st == "error" and res.get("exception"):
        return res["exception"]["type"].rsplit(".", 1)[-1]
    if st == "error":
        return f"exit {res['exit_code']}"
    return f"{st} {res.get('kill_reason') or res.get('signal')}"


# A runner makes one client per client thread (before the clock starts),
# each with run(code) -> outcome.

class Plain:
    key, label = "plain", "plain `python3 -I -c`, no isolation"

    def clients(self, n):
        return [self] * n

    def run(self, code):
        try:
            p = subprocess.run([benchlib.PY, "-I", "-c", code], capture_output=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:  # it is killed and reaped
            return "timeout"
        return stderr_outcome(p.returncode, p.stderr.decode(errors="replace"))

    def close(self):
        pass


class ForkClient:
    def __init__(self):
        self.p = subprocess.Popen([benchlib.PY, "-I", os.path.join(HERE, "forkharness.py")],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.run("pass")

    def run(self, code):
        self.p.stdin.write(json.dumps({"code": code, "timeout": TIMEOUT_S}).encode() + b"\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())["outcome"]


class Fork:
    key, label = "fork", "fork of a warm interpreter + `exec` (scripts/benchmarks/forkharness.py), no isolation"

    def clients(self, n):
        self.cs = [ForkClient() for _ in range(n)]
        return self.cs

    def close(self):
        for c in self.cs:
            c.p.stdin.close()
            c.p.wait()


class DaemonClient:
    def __init__(self, d):
        self.d, self.conn = d, benchlib.UnixHTTP(d.sock)
        self.run("pass")  # the kept-alive connection, opened

    def run(self, code):
        req = {"code": code, "limits": {"wall_time_ms": int(TIMEOUT_S * 1000)}}
        if self.d.start:
            req["start"] = self.d.start
        status, res = benchlib.post(self.conn, req)
        if status != 200:
            return f"HTTP {status}"
        with self.d.lock:
            self.d.jail_cpu += res["cpu_time_ms"]
            k = res.get("start", "(absent)")
            self.d.starts[k] = self.d.starts.get(k, 0) + 1
        return result_outcome(res)


class Daemon:
    """start: what the requests send in "start"; None: nothing (a daemon
    that refuses the field runs everything cold)."""

    def __init__(self, key, label, srv, sock, start):
        self.key, self.label, self.srv, self.sock, self.start = key, label, srv, sock, start
        self.lock, self.jail_cpu, self.starts = threading.Lock(), 0.0, {}

    def clients(self, n):
        self.cs = [DaemonClient(self) for _ in range(n)]
        return self.cs

    def cgroup_cpu(self):  # the jails' cgroups: each result's cpu_time_ms
        return self.jail_cpu

    def close(self):
        for c in self.cs:
            c.conn.close()


def phase(runner, programs, nclients):
    """Every program of programs through runner, nclients at once.
    Returns the figures of the phase and each program's outcome and time."""
    clients = runner.clients(nclients)
    time.sleep(0.2)  # what setting up the clients left behind settles
    todo, lock, outcomes = list(programs), threading.Lock(), {}

    def work(c):
        while True:
            with lock:
                if not todo:
                    return
                name, code, _ = todo.pop(0)
            t = time.perf_counter()
            o = c.run(code)
            outcomes[name] = (o, time.perf_counter() - t)

    ths = [threading.Thread(target=work, args=(c,)) for c in clients]
    cg = getattr(runner, "cgroup_cpu", lambda: 0.0)
    daemon = runner.srv.pid if isinstance(runner, Daemon) else None
    meter = KERNEL["meter"]
    k0 = meter.sample() if meter else None
    p0, b0, cg0 = proc_times(), benchlib.busy_ms(), cg()
    t0 = time.perf_counter()
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    dt = time.perf_counter() - t0
    b1, cg1, p1 = benchlib.busy_ms(), cg(), proc_times()
    runner.close()
    n = len(programs)
    kern = None
    if meter:  # after the deferred work (namespaces' teardown) is done
        time.sleep(bench_floor.SETTLE_S)
        kern = {k: v / n for k, v in kernelcpu.Meter.delta(k0, meter.sample(), KERNEL["rate"]).items()}
    f = {k: v / n for k, v in split(p0, p1, daemon).items()}
    f.update(rate=n / dt, machine=(b1 - b0) / n, cgroup=(cg1 - cg0) / n, outcomes=outcomes, kernel=kern)
    f["net"] = f["machine"] - f["other"]
    f["rest"] = f["net"] - f["kthreads"] - f["programs"] - f["daemon"] - f["client"]
    return f


def background(seconds=0.5):
    """CPU the machine spends while this benchmark sleeps: others' load, ms per second."""
    b = benchlib.busy_ms()
    time.sleep(seconds)
    return (benchlib.busy_ms() - b) / seconds


def mismatches(programs, outcomes):
    exp = {n: e for n, _, e in programs}
    return {n: (exp[n], o) for n, (o, _) in outcomes.items() if o != exp[n]}


def fmt_range(v, f="%.0f"):
    return f"{f % statistics.median(v)} ({f % min(v)}–{f % max(v)})"


def throughput(runners, programs, rounds, floor=None):
    """The check pass, then rounds of timed passes at 1 and 2 clients.
    Prints the tables."""
    timed = [p for p in programs if p[2] != "timeout"]
    endless = [p for p in programs if p[2] == "timeout"]
    # The check pass: the whole corpus, the endless loop included, through
    # every runner (2 clients); it also warms every cache. Not timed.
    wrong, endless_s = {}, {}
    for r in runners:
        res = phase(r, programs, 2)
        wrong.update({(r.label, n): v for n, v in mismatches(programs, res["outcomes"]).items()})
        endless_s[r.key] = [res["outcomes"][n][1] for n, _, _ in endless]
    figures = {(r.key, c): [] for r in runners for c in (1, 2)}
    bg = []
    for c in (1, 2):
        for i in range(rounds):
            bg.append(background())
            if KERNEL["meter"]:
                KERNEL["rate"] = KERNEL["meter"].idle_kthreads()
                if floor:
                    floor.measure(KERNEL["rate"])
            k = i % len(runners)
            for r in runners[k:] + runners[:k]:
                res = phase(r, timed, c)
                figures[(r.key, c)].append(res)
                wrong.update({(r.label, n): v for n, v in mismatches(timed, res["outcomes"]).items()})

    print(f"The corpus: {len(programs)} programs of scripts/benchmarks/corpus/ ({sum(e == 'ok' for *_, e in programs)} end well, "
          f"{sum(e == 'AssertionError' for *_, e in programs)} fail an assert, "
          f"{sum(e not in ('ok', 'AssertionError', 'timeout') for *_, e in programs)} raise, {len(endless)} never ends). "
          f"Every timed pass runs the {len(timed)} that end by themselves; the endless one is run once per runner in an "
          f"untimed check pass (its {TIMEOUT_S:.0f} s of wall and CPU would otherwise be most of a pass). "
          f"{rounds} rounds per client count; each round runs the corpus through every runner, the order rotating.")
    print()
    print("| runner | clients | programs/s, median (min–max) | machine CPU per program, ms | the same, less other tenants' processes |")
    print("|---|---|---|---|---|")
    keys = [r.key for r in runners]
    for c in (1, 2):
        for r in ALL:
            if r[0] not in keys:
                print(f"| {r[1]} | {c} | n/a | n/a | n/a |")
                continue
            v = figures[(r[0], c)]
            print(f"| {r[1]} | {c} | {fmt_range([x['rate'] for x in v])} | {fmt_range([x['machine'] for x in v], '%.1f')} | "
                  f"{fmt_range([x['net'] for x in v], '%.1f')} |")
    print()

    def ratio(a, b, c):  # median of the rounds' ratios: each round's pair ran side by side
        if a not in keys or b not in keys:
            return "n/a"
        return "%.2f" % statistics.median(x["rate"] / y["rate"] for x, y in zip(figures[(a, c)], figures[(b, c)]))

    print("| throughput ratio | 1 client | 2 clients | target |")
    print("|---|---|---|---|")
    for a, b, label, target in (("warm", "cold", "warm ÷ cold", "≥ 2.5"), ("warm", "fork", "warm ÷ fork harness", "≥ 0.8"),
                                ("cold", "plain", "cold ÷ plain python3", ""), ("cold", "fork", "cold ÷ fork harness", ""),
                                ("fork", "plain", "fork harness ÷ plain python3", "")):
        print(f"| {label} | {ratio(a, b, 1)} | {ratio(a, b, 2)} | {target} |")
    print()
    print("Where the machine's CPU per program goes (ms, medians of the rounds; from /proc/stat, and /proc/PID/stat of every "
          "process at the two ends of each pass): other tenants' processes (outside this benchmark's process tree, with "
          "their reaped children); kernel threads (kworkers, RCU, ksoftirqd: this benchmark's and others'); the programs' "
          "own processes (every process of this benchmark's tree but the client and the daemon: the jails, set-up "
          "included, with in brackets the part in the jails' cgroups, their results' `cpu_time_ms`; the python3 "
          "children; the fork servers and their children); the daemon itself (utime+stime); this benchmark's client "
          "process; and the rest, unattributed (interrupts, tick rounding).")
    print()
    print("| runner | clients | machine | other tenants | kernel threads | programs' processes | daemon | client | rest |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c in (1, 2):
        for r in runners:
            v = figures[(r.key, c)]
            m = {k: statistics.median(x[k] for x in v) for k in ("machine", "other", "kthreads", "programs", "cgroup", "daemon", "client", "rest")}
            cg = f" ({m['cgroup']:.1f})" if isinstance(r, Daemon) else ""
            print(f"| {r.label} | {c} | {m['machine']:.1f} | {m['other']:.1f} | {m['kthreads']:.1f} | {m['programs']:.1f}{cg} | "
                  f"{m['daemon']:.1f} | {m['client']:.1f} | {m['rest']:.1f} |")
    print()
    if KERNEL["meter"]:
        bench_floor.print_tables(runners, figures, floor, rounds, KERNEL["meter"])
    print(f"Background: with this benchmark asleep (0.5 s before each round) the machine was busy "
          f"{fmt_range(bg)} ms per second (of {os.cpu_count() * 1000}).")
    print("The endless loop, wall time to its outcome: " + "; ".join(
        f"{k} {', '.join('%.2f s' % s for s in v)}" for k, v in endless_s.items()) + ".")
    for r in runners:
        if isinstance(r, Daemon):
            print(f"Results' `start`, {r.label}: " + ", ".join(f"{k}: {v}" for k, v in r.starts.items()) + ".")
    if wrong:
        print()
        print("**Outcomes other than expected:**")
        for (label, n), (e, o) in sorted(wrong.items()):
            print(f"- {label}, `{n}`: expected {e}, got {o}")
    else:
        print("Every runner gave every program its expected outcome, in every pass.")
    print()


ALL = [("cold", "agentjail daemon, `\"start\": \"cold\"`"), ("warm", "agentjail daemon, `\"start\": \"warm\"`"),
       ("plain", Plain.label), ("fork", Fork.label)]

# Jails do not have the host's /etc yet (nsjail.HostEtc exists but no jail
# gets it): Debian's libblas.so.3 is a link through /etc/alternatives, and
# matplotlib wants /etc/matplotlibrc. Until then a program that imports
# numpy or matplotlib needs this, and the import rows below put it in front
# of the program on every side alike when the program fails without it.
ETC_WORKAROUND = '''import ctypes, os
for _l in ("libblas.so.3", "liblapack.so.3"):
    ctypes.CDLL("/usr/lib/x86_64-linux-gnu/openblas-pthread/" + _l, ctypes.RTLD_GLOBAL)
os.environ.setdefault("MATPLOTLIBRC", "/usr/share/matplotlib/mpl-data/matplotlibrc")
'''


def jail_code(conn, code):
    """code as it runs in a jail today: (code or ETC_WORKAROUND + code or
    None, why the plain code failed or None)."""
    res = benchlib.post_run(conn, code)
    if res["status"] == "ok":
        return code, None
    e = res.get("exception") or {}
    why = f"{e.get('type', res['status'])}: {(e.get('message') or res['stderr']).strip().splitlines()[-1][:120]}"
    res = benchlib.post_run(conn, ETC_WORKAROUND + code)
    return (ETC_WORKAROUND + code if res["status"] == "ok" else None), why


def children_cpu_ms():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r.ru_utime + r.ru_stime) * 1000


def imports(binary, sock, rounds):
    """Cold imports in a jail (local mode and through the daemon) against
    plain python3, interleaved. Prints the table."""
    conn = benchlib.UnixHTTP(sock)
    print("Cold imports (issue 17), each side in turn, the order rotating; wall time as the client sees it; CPU: "
          "plain python3's from its rusage, a jail's its `cpu_time_ms` (its cgroup).")
    print()
    print("| program | side | runs | wall, median ms | ratio to plain | CPU, median ms |")
    print("|---|---|---|---|---|---|")
    notes = []
    for prog in ("import numpy", "import numpy, pandas, matplotlib.pyplot"):
        code, why = jail_code(conn, prog)
        if code is None:
            print(f"| `{prog}` | every jail | | fails: {why} | | |")
            continue
        if why:
            notes.append(f"`{prog}` fails in a jail today ({why}): every side of its rows ran it after ETC_WORKAROUND "
                         f"(scripts/benchmarks/bench_throughput.py: libblas/liblapack loaded by path, MATPLOTLIBRC set), which "
                         f"stands in for the host /etc that jails do not get yet.")

        def plain():
            c, t = children_cpu_ms(), time.perf_counter()
            subprocess.run([benchlib.PY, "-I", "-c", code], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return time.perf_counter() - t, children_cpu_ms() - c

        def local():
            t = time.perf_counter()
            p = subprocess.run([binary, "run", "--json", "-c", code], capture_output=True, text=True)
            dt, res = time.perf_counter() - t, json.loads(p.stdout)
            assert res["status"] == "ok", res
            return dt, res["cpu_time_ms"]

        def daemon():
            t = time.perf_counter()
            res = benchlib.post_run(conn, code)
            assert res["status"] == "ok", res
            return time.perf_counter() - t, res["cpu_time_ms"]

        sides = [("plain `python3 -I -c`", plain), ("`agentjail run` (local mode)", local), ("daemon, kept-alive", daemon)]
        got = {s: [] for s, _ in sides}
        for i in range(rounds):
            k = i % len(sides)
            for s, f in sides[k:] + sides[:k]:
                time.sleep(0.05)
                got[s].append(f())
        base = statistics.median(w for w, _ in got[sides[0][0]])
        for s, _ in sides:
            w = statistics.median(x for x, _ in got[s])
            print(f"| `{prog}` | {s} | {rounds} | {w * 1000:.0f} | {w / base:.2f} | {statistics.median(c for _, c in got[s]):.0f} |")
    print()
    for n in notes:
        print(n)
        print()


def numpy_warm(binary, sock, preload, rounds):
    """`import numpy` through the daemon, cold and warm, interleaved; with
    --preload-numpy on a daemon whose default environment preloads numpy.
    Prints the table."""
    label = "numpy preloaded (`[environments.default] preload = [\"numpy\"]`)" if preload else \
        "numpy not preloaded (`--preload-numpy` not given)"
    with contextlib.ExitStack() as stack:
        conn = benchlib.UnixHTTP(sock)
        if preload:
            try:
                _, sock, conn = stack.enter_context(benchlib.daemon(binary, os.cpu_count(), '[environments.default]\npreload = ["numpy"]\n',
                                                                    or_exit=False))
            except benchlib.DaemonFailed as e:
                print(f"`import numpy`, warm ÷ cold with numpy preloaded (target ≤ 0.05): **n/a**: the daemon refuses the "
                      f"config: {e}")
                print()
                return
        ok = benchlib.starts(conn)
        code, why = jail_code(conn, "import numpy")
        print(f"`import numpy` through the daemon, kept-alive, cold and warm in turn; {label}.")
        print()
        if code is None:
            print(f"n/a: it fails in a jail: {why}")
            print()
            return
        modes = [("cold", "cold" if ok["cold"] else None)] + ([("warm", "warm")] if ok["warm"] else [])
        got = {m: [] for m, _ in modes}
        for i in range(rounds):
            for m, start in (modes if i % 2 == 0 else modes[::-1]):
                time.sleep(0.05)
                t = time.perf_counter()
                res = benchlib.post_run(conn, code, start)
                assert res["status"] == "ok", res
                got[m].append((time.perf_counter() - t, res["cpu_time_ms"], res.get("start", "(absent)")))
        print("| `import numpy` | runs | client wall, median ms | jail's `cpu_time_ms`, median | result's `start` |")
        print("|---|---|---|---|---|")
        for m, _ in modes:
            v = got[m]
            seen = {}
            for *_, s in v:
                seen[s] = seen.get(s, 0) + 1
            print(f"| {m} | {len(v)} | {statistics.median(w for w, _, _ in v) * 1000:.1f} | "
                  f"{statistics.median(c for _, c, _ in v):.1f} | {', '.join(f'{k}: {n}' for k, n in seen.items())} |")
        if not ok["warm"]:
            print("| warm | n/a: the daemon answers 400 to `\"start\": \"warm\"` | | | |")
        print()
        if ok["warm"]:
            r = statistics.median(w for w, _, _ in got["warm"]) / statistics.median(w for w, _, _ in got["cold"])
            print(f"warm ÷ cold, client wall: **{r:.3f}** (target ≤ 0.05{', with numpy preloaded' if preload else '; not preloaded here'}).")
        else:
            print("warm ÷ cold (target ≤ 0.05): n/a.")
        if why:
            print(f"`import numpy` fails in a jail today ({why}): both sides ran it after ETC_WORKAROUND.")
        print()


def main(binary, quick, preload_numpy):
    rounds, irounds, nrounds, npass = (2, 3, 6, 100) if quick else (5, 8, 20, 300)
    programs = load_corpus()
    meter, floor = kernel_meter()
    with contextlib.ExitStack() as stack:  # its callbacks run last first
        if meter:
            stack.callback(meter.close)
            stack.callback(KERNEL.update, meter=None)
        if floor:
            stack.callback(floor.close)
        srv, sock, conn = stack.enter_context(benchlib.daemon(binary, os.cpu_count()))
        ok = benchlib.starts(conn)
        runners = [Daemon("cold", ALL[0][1], srv, sock, "cold" if ok["cold"] else None)]
        if ok["warm"]:
            runners.append(Daemon("warm", ALL[1][1], srv, sock, "warm"))
        runners += [Plain(), Fork()]
        if not ok["cold"]:
            print("The daemon refuses `\"start\"` (400): its rows are its only start, cold; the warm rows are n/a.")
            print()
        throughput(runners, programs, rounds, floor)
        # New connections for each part: the daemon closes one idle for a minute.
        numpy_warm(binary, sock, preload_numpy, nrounds)
        imports(binary, sock, irounds)
    benchlib.print_start_modes(benchlib.start_modes(binary, npass))


def kernel_meter():
    """This process in a cgroup of its own, and the floor's programs
    built: (Meter, Floor), or (None, None) with a note printed."""
    try:
        meter = kernelcpu.Meter()
    except OSError as e:
        print(f"The kernel's CPU counters are n/a here ({e}): no floor, no warm ÷ floor.")
        print()
        return None, None
    KERNEL["meter"] = meter
    floor = bench_floor.Floor(meter)
    if floor.error:
        print(f"The isolation floor is n/a here: {floor.error}")
        print()
    return meter, floor
