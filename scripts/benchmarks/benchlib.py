"""The helpers of the benchmark scripts: a daemon started and stopped, its
HTTP API over its socket, timings and percentiles, the Markdown header.
bench.py and the bench_*.py scripts import it; it imports none of them."""
import argparse, contextlib, datetime, http.client, json, os, platform, socket, statistics, subprocess, sys, tempfile, time


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


def busy_ms():
    """CPU time all CPUs spent busy since boot (/proc/stat: user, nice,
    system, irq, softirq; not idle, iowait or a hypervisor's steal)."""
    f = open("/proc/stat").readline().split()
    user, nice, system, _idle, _iowait, irq, softirq = map(int, f[1:8])
    return (user + nice + system + irq + softirq) * 1000 / os.sysconf("SC_CLK_TCK")


def proc_cpu_ms(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) * 1000 / os.sysconf("SC_CLK_TCK")  # utime + stime of the daemon itself


def proc_rss(pid, field="VmRSS"):
    """A process's resident memory in bytes: VmRSS, or one of its parts
    (RssAnon, RssFile, RssShmem)."""
    for l in open(f"/proc/{pid}/status"):
        if l.startswith(field + ":"):
            return int(l.split()[1]) << 10
    return 0


class DaemonFailed(Exception):
    pass


def _start_daemon(binary, max_concurrent, extra_config="", env=None, queue_length=64):
    """A daemon of binary on a socket of its own, its 10 first runs done:
    (process, socket path, a kept-alive connection). extra_config is
    appended to its config file; env (a dict) is added to its
    environment. Raises DaemonFailed with the daemon's last words if it
    does not come up."""
    d = tempfile.mkdtemp(prefix="agentjail-bench-")
    sock = os.path.join(d, "s.sock")
    cfg = os.path.join(d, "config.toml")
    with open(cfg, "w") as f:
        f.write("[peers]\nuids = [0]\n[admission]\nmax_concurrent = %d\nqueue_length = %d\n[log]\nlevel = \"warn\"\n"
                % (max_concurrent, queue_length))
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
        _stop_daemon(None, sock)
        raise DaemonFailed(f"the daemon did not come up (exit status {srv.returncode}): {words[-500:]}")
    conn = UnixHTTP(sock)
    try:
        settle_daemon(conn)
        for _ in range(10):
            post_run(conn)
    except BaseException:  # a failed first run (bench exits) leaves no daemon behind
        conn.close()
        _stop_daemon(srv, sock)
        raise
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


def parse_side(side):
    """One side of the side-by-side scripts, BINARY[@EXTRA_CONFIG[@ENV]]:
    EXTRA_CONFIG is appended to the daemon's config file (\\n for a
    newline), ENV is NAME=VALUE[,NAME=VALUE] for its process. Returns
    (binary, extra_config, env dict)."""
    binary, extra, envs = (side.split("@", 2) + ["", ""])[:3]
    return binary, extra.replace("\\n", "\n"), dict(kv.split("=", 1) for kv in envs.split(",") if kv)


def _stop_daemon(srv, sock):
    """Ends a _start_daemon daemon (SIGTERM, SIGKILL after 30 s) and
    removes its folder."""
    if srv:
        srv.terminate()
        try:
            srv.wait(timeout=30)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()
    d = os.path.dirname(sock)
    for f in ("config.toml", "s.sock", "stderr.log"):
        if os.path.exists(os.path.join(d, f)):
            os.remove(os.path.join(d, f))
    os.rmdir(d)


@contextlib.contextmanager
def daemon(binary, max_concurrent, extra_config="", env=None, queue_length=64, or_exit=True):
    """The one way a benchmark starts a daemon: for the length of a with
    block, a daemon of binary on a socket of its own, its 10 first runs
    done, yielded as (process, socket path, a kept-alive connection).
    Its config allows root as a peer, max_concurrent and queue_length in
    [admission], log level warn; extra_config is appended to it, env (a
    dict) added to its environment. When the block ends, however it ends,
    the daemon is stopped and its folder removed. If the daemon does not
    come up the benchmark exits with its last words; with or_exit=False,
    DaemonFailed is raised instead (for a row that says n/a). Several
    daemons at once: contextlib.ExitStack.enter_context for each."""
    try:
        srv, sock, conn = _start_daemon(binary, max_concurrent, extra_config, env, queue_length)
    except DaemonFailed as e:
        if or_exit:
            sys.exit(f"bench: {e}")
        raise
    try:
        yield srv, sock, conn
    finally:
        conn.close()
        _stop_daemon(srv, sock)


def start_modes(binary, n, block=50):
    """Runs of `pass` through one daemon, cold and warm side by side (issue
    18): the kept-alive latency against bare python3 and the daemon's own
    CPU (utime+stime) per run. Blocks of `block` runs of one start alternate
    (cold, warm, warm, cold, ...), each run after a bare python3: the
    daemon's CPU is read at a block's two ends, after a pause, so that the
    clock ticks' rounding stays small and the work a run leaves behind (the
    replacement of its prepared jail) falls in its own block. Returns
    {"cold"/"warm": None when the daemon refuses that start, else a dict}."""
    with daemon(binary, os.cpu_count()) as (srv, sock, conn):
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


def run_by_hand(run, what, n=20):
    """The command line of a runner that is also run by hand (--bin,
    --n): prints the Markdown header, what (with {n} for the count) the
    runs it makes, then run(binary, n)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="bin/agentjail")
    ap.add_argument("--n", type=int, default=n)
    a = ap.parse_args()
    header(a.bin, " ".join(sys.argv), what.format(n=a.n))
    run(a.bin, a.n)
