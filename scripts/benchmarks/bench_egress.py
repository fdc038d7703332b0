"""agentjail benchmark, network egress (issue 33): `scripts/bench --egress`.

Against one daemon started in the egress tests' own network (the Go helper
internal/networld/egressworld makes two network namespaces, the servers
and `agentjail serve` in namespace D), side by side in one run:
- a warm `pass` naming a network policy (the proxy's listener made in the
  run's namespace and closed) against a warm `pass` without one, in
  alternating blocks: the machine's CPU per run (all CPUs' busy time in
  /proc/stat over a block, divided by its runs), the daemon's own CPU per
  run, and the client's wall time. Target: at most 0.3 ms more machine CPU
  per run with a policy.
- one large download (256 MiB by default) by python3 in a jail, through
  the proxy, against the same program run directly in namespace D (no
  proxy), alternating: MB/s. Target: through the proxy at least 0.8 of
  direct.
Warm and cold `pass` without a policy against the previous commit are
scripts/benchmarks/bench_ab.py's. Stdlib only; the daemon helpers are benchlib.py's.
Needs root (network namespaces).
"""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

from benchlib import PY, UnixHTTP, busy_ms, pct, post, proc_cpu_ms

DOWNLOAD = """import time, urllib.request
t = time.perf_counter(); c = time.process_time(); n = 0
with urllib.request.urlopen("http://{host}/bytes?n={size}", timeout=300) as r:
    while True:
        b = r.read(1 << 20)
        if not b:
            break
        n += len(b)
print(n, time.perf_counter() - t, (time.process_time() - c) * 1000)
"""

# A CONNECT tunnel is not measured: the proxy takes a tunnel only for TLS
# whose SNI matches (docs/contract.md section 8), and the world's echo
# server speaks plain HTTP. Tunnels and known-length bodies take the same
# splice path in the proxy (egress/splice_linux.go).


def start_world(binary, size):
    """Builds and starts the helper; returns (its process, its JSON line)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
    helper = os.path.join(tempfile.mkdtemp(prefix="bench-egress-"), "egressworld")
    env = dict(os.environ, PATH="/usr/local/go/bin:" + os.environ.get("PATH", ""))
    subprocess.run(["go", "build", "-o", helper, "./internal/networld/egressworld"], cwd=root, env=env, check=True)
    # max_bytes above the download; the policy allows the echo server.
    network = f"max_bytes = {size * 2 + (1 << 20)}\nidle_timeout_ms = 60000"
    config = '[network.policies.bench]\nallow = ["echo.test:80"]\n[limits.max]\nwall_time_ms = 300000\ncpu_time_ms = 300000\n'
    p = subprocess.Popen([helper, "--bin", os.path.abspath(binary), "--network", network, "--config", config],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if not line:
        p.wait()
        shutil.rmtree(os.path.dirname(helper), ignore_errors=True)
        sys.exit("bench: the egress world did not start (see its error above)")
    p.helper_dir = os.path.dirname(helper)
    return p, json.loads(line)


def stop_world(p):
    p.stdin.close()
    p.wait(timeout=60)
    shutil.rmtree(p.helper_dir, ignore_errors=True)


def run(conn, req):
    status, res = post(conn, req)
    if status != 200 or res.get("status") != "ok":
        sys.exit(f"bench: the run failed ({status}): {res}")
    return res


def pass_cost(conn, pid, n, block):
    """Alternating blocks of warm `pass` with and without a policy:
    {side: (machine CPU ms per run per block, daemon CPU ms per run per
    block, wall ms of every run)}."""
    sides = {"policy": {"code": "pass", "start": "warm", "network": {"policy": "bench"}},
             "none": {"code": "pass", "start": "warm"}}
    for req in sides.values():  # warm up both paths
        for _ in range(20):
            run(conn, req)
    out = {k: ([], [], [], []) for k in sides}
    for i in range(n // block):
        for name in (("policy", "none") if i % 2 == 0 else ("none", "policy")):
            req = sides[name]
            m0, d0, jail = busy_ms(), proc_cpu_ms(pid), 0.0
            for _ in range(block):
                t = time.perf_counter()
                res = run(conn, req)
                out[name][2].append((time.perf_counter() - t) * 1000)
                jail += res["cpu_time_ms"]
                if name == "policy" and res.get("network") is None:
                    sys.exit("bench: a run with a policy has no network report: is egress in this build?")
            out[name][0].append((busy_ms() - m0) / block)
            out[name][1].append((proc_cpu_ms(pid) - d0) / block)
            out[name][3].append((proc_cpu_ms(pid) - d0 + jail) / block)
    return out


def download(conn, world, size, reps, server_pid):
    """Alternating: the download in a jail through the proxy, and directly
    in namespace D. {side: [MB/s]}, {side: [(reader, daemon, server) CPU ms]}."""
    code_proxy = DOWNLOAD.format(host=world["echo_name"], size=size)
    code_direct = DOWNLOAD.format(host=world["echo"], size=size)
    got, cpu = {"proxy": [], "direct": []}, {"proxy": [], "direct": []}
    for i in range(-2, reps):  # two rounds of warm-up first (page cache, TCP buffers)
        for side in (("proxy", "direct") if i % 2 == 0 else ("direct", "proxy")):
            d0, s0 = proc_cpu_ms(world["pid"]), proc_cpu_ms(server_pid)
            if side != "direct":
                res = run(conn, {"code": code_proxy, "start": "warm", "network": {"policy": "bench"},
                                 "limits": {"wall_time_ms": 300000, "cpu_time_ms": 300000}})
                out = res["stdout"]
            else:
                out = subprocess.run(["nsenter", f"--net=/run/netns/{world['d']}", "--", PY, "-I", "-c", code_direct],
                                     env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, check=True).stdout
            n, secs, reader = out.split()
            if int(n) != size:
                sys.exit(f"bench: the {side} download got {n} bytes of {size}")
            if i >= 0:
                got[side].append(size / float(secs) / 1e6)
                cpu[side].append((float(reader), proc_cpu_ms(world["pid"]) - d0, proc_cpu_ms(server_pid) - s0))
    return got, cpu


def main(binary, quick, size=256 << 20):
    n, block, reps = (200, 50, 3) if quick else (1000, 100, 5)
    p, world = start_world(binary, size)
    try:
        conn = UnixHTTP(world["socket"])
        cost = pass_cost(conn, world["pid"], n, block)
        tput, cpu = download(conn, world, size, reps, p.pid)
    finally:
        stop_world(p)
    load = open("/proc/loadavg").read().split()[:3]
    print(f"Warm `pass` with a network policy against without, {n} runs each in alternating blocks of {block} "
          f"(load average {' '.join(load)}): machine CPU is all CPUs' busy time over a block (other tenants included), "
          f"the daemon's its own utime+stime (the proxy runs in it).")
    print()
    print("| warm `pass` | machine CPU ms/run, median of blocks (min–max) | daemon + jail CPU ms/run (min–max) | daemon CPU ms/run | client wall ms, median (p90) |")
    print("|---|---|---|---|---|")
    for side, label in (("none", "no `network`"), ("policy", "`network: {policy}`")):
        m, d, w, o = cost[side]
        print(f"| {label} | {statistics.median(m):.2f} ({min(m):.2f}–{max(m):.2f}) | {statistics.median(o):.2f} ({min(o):.2f}–{max(o):.2f}) | "
              f"{statistics.median(d):.2f} | {statistics.median(w):.2f} ({pct(w, .9):.2f}) |")
    diff = [statistics.median(cost["policy"][k]) - statistics.median(cost["none"][k]) for k in range(4)]
    print(f"| **difference** (target ≤ 0.3 ms machine CPU) | **{diff[0]:+.2f}** | **{diff[3]:+.2f}** | {diff[1]:+.2f} | {diff[2]:+.2f} |")
    print()
    print("Machine CPU counts every tenant of the host; on a busy host the daemon's and the jails' own CPU "
          "(its utime+stime, their results' `cpu_time_ms`) is the figure to read.")
    print()
    mp, md = statistics.median(tput["proxy"]), statistics.median(tput["direct"])
    print(f"One download of {size >> 20} MiB by python3 (urllib, 1 MiB reads), {reps} of each side alternating:")
    print()
    print("| download | MB/s, median (min–max) |")
    print("|---|---|")
    print(f"| directly from the daemon's namespace (no proxy, not jailed) | {md:.0f} ({min(tput['direct']):.0f}–{max(tput['direct']):.0f}) |")
    print(f"| in a jail through the proxy, absolute-form GET (urllib) | {mp:.0f} ({min(tput['proxy']):.0f}–{max(tput['proxy']):.0f}) |")
    print(f"| **ratio**, absolute-form / direct (target ≥ 0.8) | **{mp / md:.2f}** |")
    print()
    print("CPU of each stage per download, ms, median (the reader's own process_time; the daemon's and the "
          "egress world's server's utime+stime, in ticks):")
    print()
    print("| download | reader | daemon (relay) | server | total |")
    print("|---|---|---|---|---|")
    for side in ("direct", "proxy"):
        med = [statistics.median(x[k] for x in cpu[side]) for k in range(3)]
        print(f"| {side} | {med[0]:.0f} | {med[1]:.0f} | {med[2]:.0f} | {sum(med):.0f} |")
