"""agentjail benchmark: latency against bare python3, and peak-memory precision.

Stdlib only. Each figure is measured side by side with its baseline in the
same run, interleaved (bare, jail, bare, jail, ...), so that the machine's
drift hits both equally; ratios are what to compare across machines.
"""
import argparse, datetime, http.client, json, os, platform, socket, statistics, subprocess, sys, tempfile, threading, time

PY = "/usr/bin/python3"


def timed(cmd):
    t = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dt = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"bench: {cmd} exited {p.returncode}")
    return dt * 1000


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def latency(binary, n):
    bare, jail = [], []
    for _ in range(5):  # warm the page cache
        timed([PY, "-I", "-c", "pass"]); timed([binary, "run", "-c", "pass"])
    for _ in range(n):
        bare.append(timed([PY, "-I", "-c", "pass"]))
        jail.append(timed([binary, "run", "-c", "pass"]))
    return bare, jail


def jail_json(binary, code, *flags):
    p = subprocess.run([binary, "run", "--json", *flags, "-c", code], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"bench: jail failed ({p.returncode}): {p.stdout} {p.stderr}")
    return json.loads(p.stdout)


ALLOC = 'b = b"\\x01" * ({n} << 20)'
TMPFS = '''c = b"\\x01" * (64 << 10)
with open("/tmp/f", "wb") as f:
    for _ in range({n} * 16): f.write(c)
'''
FOURPROC = '''import os
r, w = os.pipe()
ready_r, ready_w = os.pipe()
kids = []
for i in range(3):
    pid = os.fork()
    if pid == 0:
        b = b"\\x01" * (({n} << 20) // 4); os.write(ready_w, b"."); os.read(r, 1); os._exit(0)
    kids.append(pid)
b = b"\\x01" * (({n} << 20) // 4)
for _ in range(3): os.read(ready_r, 1)   # all four hold their share at once
os.write(w, b"xxx")
for k in kids: os.waitpid(k, 0)
'''


def precision(binary, reps):
    rows = []
    sizes = [0, 16, 64, 256, 1024]
    # Time is not what this measures: a generous clock, so that a slow host
    # (an emulated guest makes 1 GiB in 10-20 s) measures instead of failing.
    lim = ["--memory", "1400MiB", "--timeout", "120s", "--cpu-time", "120s"]
    base = statistics.median(jail_json(binary, "pass", *lim)["peak_memory_bytes"] for _ in range(reps))
    fbase = statistics.median(jail_json(binary, FOURPROC.format(n=0), *lim)["peak_memory_bytes"] for _ in range(reps))
    for kind, code, extra, b0 in (("anonymous", ALLOC, [], base), ("tmpfs /tmp", TMPFS, ["--tmp-size", "1100MiB", "--file-size", "1100MiB"], base),
                                  ("4 processes × N/4", FOURPROC, [], fbase)):
        for n in sizes:
            peaks = [jail_json(binary, code.format(n=n), *lim, *extra)["peak_memory_bytes"] for _ in range(reps)]
            p = statistics.median(peaks)
            delta = (p - b0) / (1 << 20)
            rows.append((kind, n, p / (1 << 20), delta, delta - n))
    return base, fbase, rows


def cgroup_version():
    return "v2" if os.path.exists("/sys/fs/cgroup/cgroup.controllers") else "v1 (hybrid)" if os.path.isdir("/sys/fs/cgroup/memory") else "?"


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("agentjail")
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


def post(conn, req):
    """POST /v1/run of the request req (a dict): (HTTP status, the answer's JSON)."""
    conn.request("POST", "/v1/run", json.dumps(req), {"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    try:
        return r.status, json.loads(data)
    except ValueError:
        return r.status, {"error": data[:300].decode(errors="replace")}


def post_run(conn, code="pass", start=None, **req):
    """The result of a run of code; start: "cold", "warm" or None (the
    daemon's default, and the only choice of a daemon without warm runs)."""
    req["code"] = code
    if start:
        req["start"] = start
    status, res = post(conn, req)
    if status != 200:
        sys.exit(f"bench: daemon answered {status}: {res}")
    return res


def starts(conn):
    """Which of "cold" and "warm" this daemon accepts in a request's
    "start" (issue 18): a 400 means it does not know the field or the
    value."""
    ok = {}
    for s in ("cold", "warm"):
        status, res = post(conn, {"code": "pass", "start": s})
        if status not in (200, 400):
            sys.exit(f"bench: daemon answered {status}: {res}")
        ok[s] = status == 200
    return ok


def proc_cpu_ms(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) * 1000 / os.sysconf("SC_CLK_TCK")  # utime + stime of the daemon itself


def proc_rss(pid):
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS:"):
            return int(l.split()[1]) << 10
    return 0


class DaemonFailed(Exception):
    pass


def try_start_daemon(binary, max_concurrent, extra_config="", env=None):
    """A daemon of binary on a socket of its own, its 10 first runs done:
    (process, socket path, a kept-alive connection). extra_config is
    appended to its config file; env (a dict) is added to its
    environment. Raises DaemonFailed with the daemon's last words if it
    does not come up."""
    d = tempfile.mkdtemp(prefix="agentjail-bench-")
    sock = os.path.join(d, "s.sock")
    cfg = os.path.join(d, "config.toml")
    with open(cfg, "w") as f:
        f.write("[peers]\nuids = [0]\n[admission]\nmax_concurrent = %d\nqueue_length = 64\n[log]\nlevel = \"warn\"\n" % max_concurrent)
        f.write(extra_config)
    log = open(os.path.join(d, "stderr.log"), "w")
    srv = subprocess.Popen([binary, "serve", "--config", cfg, "--socket", sock], stderr=log,
                           env={**os.environ, **env} if env else None)
    log.close()
    for _ in range(200):
        if os.path.exists(sock) or srv.poll() is not None:
            break
        time.sleep(0.02)
    if srv.poll() is not None or not os.path.exists(sock):
        srv.kill()
        srv.wait()
        words = open(os.path.join(d, "stderr.log")).read().strip()
        stop_daemon(None, sock)
        raise DaemonFailed(f"the daemon did not come up (exit status {srv.returncode}): {words[-500:]}")
    conn = UnixHTTP(sock)
    settle_daemon(conn)
    for _ in range(10):
        post_run(conn)
    return srv, sock, conn


def settle_daemon(conn, timeout=180):
    """Waits until no environment's font cache is being built: once built,
    the daemon replaces its jails, and runs meanwhile may start cold."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        conn.request("GET", "/v1/environments")
        r = conn.getresponse()
        data = r.read()
        if r.status != 200:  # an older daemon: nothing to wait for
            return
        envs = json.loads(data).get("environments", [])
        if not any(e.get("font_cache") == "building" for e in envs):
            return
        time.sleep(0.1)
    sys.exit("bench: the daemon's font cache was still being built after %d s" % timeout)


def start_daemon(binary, max_concurrent, extra_config="", env=None):
    try:
        return try_start_daemon(binary, max_concurrent, extra_config, env)
    except DaemonFailed as e:
        sys.exit(f"bench: {e}")


def parse_side(side):
    """One side of the side-by-side scripts, BINARY[@EXTRA_CONFIG[@ENV]]:
    EXTRA_CONFIG is appended to the daemon's config file (\\n for a
    newline), ENV is NAME=VALUE[,NAME=VALUE] for its process. Returns
    (binary, extra_config, env dict)."""
    binary, extra, envs = (side.split("@", 2) + ["", ""])[:3]
    return binary, extra.replace("\\n", "\n"), dict(kv.split("=", 1) for kv in envs.split(",") if kv)


def stop_daemon(srv, sock):
    """Ends a start_daemon daemon and removes its folder."""
    if srv:
        srv.terminate()
        srv.wait(timeout=30)
    d = os.path.dirname(sock)
    for f in ("config.toml", "s.sock", "stderr.log"):
        if os.path.exists(os.path.join(d, f)):
            os.remove(os.path.join(d, f))
    os.rmdir(d)


def daemon_bench(binary, n):
    """End-to-end latency through the socket, throughput, idle RSS and
    daemon CPU per run, against a daemon started here."""
    srv, sock, conn = start_daemon(binary, os.cpu_count())
    try:
        time.sleep(1)
        idle_rss = proc_rss(srv.pid)

        def persistent():
            t = time.perf_counter(); post_run(conn); return (time.perf_counter() - t) * 1000

        def fresh():  # a new connection per run, as a one-shot client does
            t = time.perf_counter(); c = UnixHTTP(sock); post_run(c); c.close(); return (time.perf_counter() - t) * 1000

        # Each sample starts on a quiet host: after a run the daemon starts
        # the replacement of the prepared jail it used (about 3 ms of
        # work), which would otherwise land on whatever runs next, bare
        # python3 included. Throughput below measures runs back to back.
        settle = lambda: time.sleep(0.02)
        bare, keep, conn1, cli = [], [], [], []
        cpu0 = proc_cpu_ms(srv.pid)
        for _ in range(n):
            settle(); bare.append(timed([PY, "-I", "-c", "pass"]))
            settle(); keep.append(persistent())
            settle(); conn1.append(fresh())
            settle(); cli.append(timed([binary, "run", "--socket", sock, "-c", "pass"]))
        cpu_per_run = (proc_cpu_ms(srv.pid) - cpu0) / (3 * n)

        tput = []
        for clients in (1, 2, 8):
            total = 40 * clients if clients < 8 else 200
            left = [total]
            lock = threading.Lock()

            def worker():
                c = UnixHTTP(sock)
                while True:
                    with lock:
                        if left[0] == 0:
                            break
                        left[0] -= 1
                    post_run(c)
                c.close()
            t = time.perf_counter()
            ths = [threading.Thread(target=worker) for _ in range(clients)]
            for th in ths: th.start()
            for th in ths: th.join()
            tput.append((clients, total, total / (time.perf_counter() - t)))
        return bare, keep, conn1, cli, idle_rss, cpu_per_run, tput
    finally:
        stop_daemon(srv, sock)


def start_modes(binary, n, block=50):
    """Runs of `pass` through one daemon, cold and warm side by side (issue
    18): the kept-alive latency against bare python3 and the daemon's own
    CPU (utime+stime) per run. Blocks of `block` runs of one start alternate
    (cold, warm, warm, cold, ...), each run after a bare python3: the
    daemon's CPU is read at a block's two ends, after a pause, so that the
    clock ticks' rounding stays small and the work a run leaves behind (the
    replacement of its prepared jail) falls in its own block. Returns
    {"cold"/"warm": None when the daemon refuses that start, else a dict}."""
    srv, sock, conn = start_daemon(binary, os.cpu_count())
    try:
        ok = starts(conn)
        # A daemon without warm runs refuses "start" altogether: its runs are cold.
        modes = {"cold": "cold" if ok["cold"] else None}
        if ok["warm"]:
            modes["warm"] = "warm"
        stat = {m: {"bare": [], "run": [], "cpu": 0.0, "starts": {}} for m in modes}
        settle = lambda: time.sleep(0.02)
        for b in range(max(1, n // block)):
            for m in (list(modes) if b % 2 == 0 else list(modes)[::-1]):
                st = stat[m]
                settle()
                c0 = proc_cpu_ms(srv.pid)
                for _ in range(block):
                    settle(); st["bare"].append(timed([PY, "-I", "-c", "pass"]))
                    settle()
                    t = time.perf_counter()
                    res = post_run(conn, "pass", modes[m])
                    st["run"].append((time.perf_counter() - t) * 1000)
                    k = res.get("start", "(absent)")
                    st["starts"][k] = st["starts"].get(k, 0) + 1
                settle()
                st["cpu"] += proc_cpu_ms(srv.pid) - c0
        out = {"cold": None, "warm": None}
        for m, st in stat.items():
            mb, v = statistics.median(st["bare"]), st["run"]
            out[m] = {"cpu": st["cpu"] / len(v), "median": statistics.median(v), "p10": pct(v, .1), "p90": pct(v, .9),
                      "bare": mb, "ratio": statistics.median(v) / mb, "runs": len(v), "starts": st["starts"],
                      "sent": modes[m]}
        return out
    finally:
        stop_daemon(srv, sock)


def print_start_modes(r):
    print("Cold and warm runs of `pass` through one daemon, kept-alive connection, side by side (issue 18): blocks of 50 runs of each start alternate, each run after a bare python3.")
    print()
    print("| `pass`, kept-alive | runs | median ms | p10 | p90 | bare python3, its interleaved median | ratio to bare | daemon CPU per run (its own utime+stime) | result's `start` |")
    print("|---|---|---|---|---|---|---|---|---|")
    for m in ("cold", "warm"):
        x = r[m]
        if x is None:
            print(f"| {m} | n/a: the daemon answers 400 to `\"start\": \"{m}\"` | | | | | | | |")
            continue
        sent = f"`\"start\": \"{x['sent']}\"`" if x["sent"] else "no `start` (the daemon refuses the field; its runs are cold)"
        seen = ", ".join(f"{k}: {v}" for k, v in x["starts"].items())
        print(f"| {m}: {sent} | {x['runs']} | {x['median']:.2f} | {x['p10']:.2f} | {x['p90']:.2f} | {x['bare']:.2f} | **{x['ratio']:.2f}** | **{x['cpu']:.2f} ms** | {seen} |")
    w = r["warm"]
    wr = "n/a" if w is None else "%.2f×" % w["ratio"]
    wc = "n/a" if w is None else "%.2f ms" % w["cpu"]
    print()
    print(f"Targets: warm ≤ 0.25× bare: {wr}; daemon CPU per run ≤ 1.5 ms: cold {r['cold']['cpu']:.2f} ms, warm {wc}.")
    print()


def header(binary, command, what):
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    version = subprocess.run([binary, "version"], capture_output=True, text=True).stdout.strip()
    print(f"### {datetime.date.today()} · {platform.node()}")
    print()
    print(f"- machine: {os.cpu_count()} CPUs ({cpu}), {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') >> 30} GiB, Linux {platform.release()}, cgroup {cgroup_version()}")
    print(f"- binary: {binary} ({version})")
    print(f"- command: `{command}` ({what})")
    print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--throughput", action="store_true",
                    help="issue 18's figures instead: the corpus through the daemon (cold, warm), plain python3 and a fork harness; "
                         "daemon CPU per run cold and warm; import numpy cold and warm; cold imports")
    ap.add_argument("--preload-numpy", action="store_true",
                    help="with --throughput: the import numpy row on a daemon whose default environment preloads numpy")
    ap.add_argument("--sessions", action="store_true",
                    help="issue 19's figures instead: a call in a live session against the client's round trip, "
                         "session start warm and cold, the daemon's cost per idle session")
    ap.add_argument("--egress", action="store_true",
                    help="issue 33's figures instead: warm pass with a network policy against without (machine CPU per run), "
                         "a 256 MiB download through the proxy against directly (needs root: network namespaces)")
    a = ap.parse_args()
    flags = "".join(f" --{f}" for f, on in (("throughput", a.throughput), ("sessions", a.sessions), ("egress", a.egress),
                                             ("quick", a.quick), ("preload-numpy", a.preload_numpy)) if on)
    if a.egress:
        import bench_egress
        header(a.bin, f"scripts/bench{flags}", "each figure side by side with its baseline in the same run")
        bench_egress.main(a.bin, a.quick)
        return
    if a.sessions:
        import bench_sessions
        header(a.bin, f"scripts/bench{flags}", "each figure side by side with its baseline in the same run")
        bench_sessions.main(a.bin, a.quick)
        return
    if a.throughput:
        import bench_throughput
        header(a.bin, f"scripts/bench{flags}", "each figure side by side with its baselines in the same run")
        bench_throughput.main(a.bin, a.quick, a.preload_numpy)
        return
    n, reps = (40, 1) if a.quick else (200, 3)
    header(a.bin, f"scripts/bench{flags}", f"{n} interleaved runs of each side; peaks are medians of {reps}")
    bare, jail = latency(a.bin, n)
    mb, mj = statistics.median(bare), statistics.median(jail)
    print("| `pass` | median ms | p10 | p90 |")
    print("|---|---|---|---|")
    print(f"| bare `{PY} -I -c pass` | {mb:.2f} | {pct(bare, .1):.2f} | {pct(bare, .9):.2f} |")
    print(f"| `agentjail run -c pass` (local mode) | {mj:.2f} | {pct(jail, .1):.2f} | {pct(jail, .9):.2f} |")
    print(f"| **ratio** (target ≤ 2.0) | **{mj / mb:.2f}** | | |")
    print()
    bare, keep, conn1, cli, idle_rss, cpu_per_run, tput = daemon_bench(a.bin, n)
    mb = statistics.median(bare)
    print("Through the daemon (`agentjail serve`, its socket; client time included), interleaved with bare python3:")
    print()
    print("| `pass` | median ms | p10 | p90 | ratio (cold target ≤ 1.2; warm ≤ 0.25) |")
    print("|---|---|---|---|---|")
    print(f"| bare `{PY} -I -c pass` | {mb:.2f} | {pct(bare, .1):.2f} | {pct(bare, .9):.2f} | 1.00 |")
    for label, v in (("POST /v1/run, kept-alive connection (Python client)", keep), ("POST /v1/run, new connection per run", conn1),
                     ("`agentjail run --socket … -c pass` (CLI process)", cli)):
        print(f"| {label} | {statistics.median(v):.2f} | {pct(v, .1):.2f} | {pct(v, .9):.2f} | **{statistics.median(v) / mb:.2f}** |")
    print()
    print("| daemon | figure | target |")
    print("|---|---|---|")
    print(f"| idle RSS after 10 runs | {idle_rss / (1 << 20):.1f} MiB | < 20 MiB |")
    print(f"| daemon CPU per run (its own utime+stime; jails excluded) | {cpu_per_run:.2f} ms | ≤ 1.5 ms |")
    for clients, total, rps in tput:
        print(f"| throughput, {clients} concurrent client(s), {total} runs of `pass` | {rps:.0f} runs/s | |")
    print()
    print_start_modes(start_modes(a.bin, 100 if a.quick else 300))
    base, fbase, rows = precision(a.bin, reps)
    print(f"Peak memory (`peak_memory_bytes`): `pass` baseline {base / (1 << 20):.2f} MiB (4-process baseline {fbase / (1 << 20):.2f} MiB); target: peak − baseline = N ± 1 MiB, plus the program's page tables, which the kernel charges (about 2 MiB per GiB).")
    print()
    print("| program | N MiB | peak MiB | peak − baseline | error MiB |")
    print("|---|---|---|---|---|")
    for kind, n_, p, d, e in rows:
        print(f"| {kind} | {n_} | {p:.2f} | {d:.2f} | {e:+.2f}{'' if -1 <= e <= 1 + 2 * n_ / 1024 else ' ✗'} |")


if __name__ == "__main__":
    main()
