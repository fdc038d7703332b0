"""agentjail sizing figures for docs/operations.md ("Sizing a host"):
`python3 scripts/benchmarks/bench_sizing.py bin/agentjail`, as root.

Against one daemon started here (max_concurrent 2, uids of its own):
- the idle daemon: its RSS and PSS after 10 runs, and what its waiting
  processes hold (the zygote, the warm runs forked ahead: their PSS and
  their cgroups' memory);
- a running jail: the growth of all of that, per jail, while two jails
  sleep at once;
- an idle session: the same, per session, with four alive;
- common workloads: peak_memory_bytes and pids_peak of each.
Stdlib only; the daemon helpers are benchlib.py's.
"""
import json, os, random, sys, threading, time

from benchlib import UnixHTTP, daemon, post, proc_rss

MiB = 1 << 20


def pss(pid):
    try:
        for l in open(f"/proc/{pid}/smaps_rollup"):
            if l.startswith("Pss:"):
                return int(l.split()[1]) << 10
    except OSError:
        pass
    return 0


def uid_of(pid):
    try:
        for l in open(f"/proc/{pid}/status"):
            if l.startswith("Uid:"):
                return int(l.split()[1])
    except OSError:
        pass
    return -1


def memory_cgroup(pid):
    """The memory cgroup directory of pid (v1 or v2), or None."""
    try:
        for l in open(f"/proc/{pid}/cgroup"):
            n, ctl, path = l.rstrip("\n").split(":", 2)
            if ctl == "memory":
                return "/sys/fs/cgroup/memory" + path
            if n == "0" and ctl == "" and os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
                return "/sys/fs/cgroup" + path
    except OSError:
        pass
    return None


def cgroup_usage(d):
    for f in ("memory.usage_in_bytes", "memory.current"):
        try:
            return int(open(os.path.join(d, f)).read())
        except OSError:
            pass
    return 0


def jail_side(base, size):
    """PSS of every process of the uid range, and the memory of their
    distinct cgroups (other than the caller's own): what the jails hold."""
    own = memory_cgroup(os.getpid())
    total_pss, groups = 0, set()
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        u = uid_of(int(e))
        if base <= u < base + size:
            total_pss += pss(int(e))
            g = memory_cgroup(int(e))
            if g and g != own:
                groups.add(g)
    return total_pss, sum(cgroup_usage(g) for g in groups), len(groups)


def snapshot(srv, base, size):
    p, cg, n = jail_side(base, size)
    return {"daemon_rss": proc_rss(srv.pid), "daemon_pss": pss(srv.pid), "jail_pss": p, "jail_cgroups": cg, "groups": n}


def delta(a, b, per):
    return {k: (b[k] - a[k]) / per for k in ("daemon_rss", "daemon_pss", "jail_pss", "jail_cgroups")}


def fmt(d):
    return ", ".join(f"{k} {v / MiB:.2f} MiB" for k, v in d.items() if k != "groups")


WORKLOADS = [
    ("pass", "pass", {}),
    ("import numpy", "import numpy", {}),
    ("import pandas", "import pandas", {}),
    ("pandas: 1e6 x 4 frame, groupby", "import numpy as np, pandas as pd\n"
     "df = pd.DataFrame(np.random.rand(1_000_000, 4), columns=list('abcd'))\n"
     "df['k'] = (df.a * 100).astype(int)\nprint(df.groupby('k').mean().shape)", {}),
    ("matplotlib: a chart to PNG", "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
     "plt.plot(range(100)); plt.savefig('c.png')", {}),
    ("multiprocessing.Pool(8) of numpy workers", "import multiprocessing as mp, numpy as np\n"
     "def f(i): return float(np.ones(10).sum())\n"
     "if __name__ == '__main__':\n    with mp.Pool(8) as p: print(sum(p.map(f, range(64))))",
     {"limits": {"pids": 1024, "memory_bytes": 1 << 30}}),
    ("multiprocessing.Pool() of numpy workers, each a matrix product", "import multiprocessing as mp, numpy as np\n"
     "def f(i): return float((np.ones((300, 300)) @ np.ones((300, 300))).sum())\n"
     "if __name__ == '__main__':\n    with mp.Pool() as p: print(sum(p.map(f, range(64))))",
     {"limits": {"pids": 1024, "memory_bytes": 1 << 30}}),
    ("32 threads", "import threading, time\n"
     "ts = [threading.Thread(target=time.sleep, args=(0.3,)) for _ in range(32)]\n"
     "[t.start() for t in ts]; [t.join() for t in ts]", {}),
]


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "bin/agentjail"
    base, size = 3_200_000_000 + random.randrange(1000) * 100_000, 100_000
    with daemon(binary, 2, f"[jail]\nuid_base = {base}\nuid_count = {size}\n") as (srv, sock, conn):
        time.sleep(2)
        idle = snapshot(srv, base, size)
        print(f"idle daemon after 10 runs: RSS {idle['daemon_rss'] / MiB:.1f} MiB, PSS {idle['daemon_pss'] / MiB:.1f} MiB; "
              f"its waiting processes (zygote, runs ahead): PSS {idle['jail_pss'] / MiB:.1f} MiB, "
              f"cgroups {idle['jail_cgroups'] / MiB:.1f} MiB in {idle['groups']} groups")

        seen = {}

        def sleeper(i):
            c = UnixHTTP(sock)
            seen[i] = post(c, {"code": "import time; time.sleep(4)"})
        ts = [threading.Thread(target=sleeper, args=(i,)) for i in range(2)]
        [t.start() for t in ts]
        time.sleep(2)
        busy = snapshot(srv, base, size)
        [t.join() for t in ts]
        print("per running jail (2 sleeping at once, against idle):", fmt(delta(idle, busy, 2)))
        print("  each run's own peak_memory_bytes:", ", ".join(f"{s[1].get('peak_memory_bytes', 0) / MiB:.2f} MiB" for s in seen.values()))

        time.sleep(2)
        idle = snapshot(srv, base, size)
        sids = []
        for _ in range(4):
            conn.request("POST", "/v1/sessions", json.dumps({}), {"Content-Type": "application/json"})
            r = conn.getresponse(); body = json.loads(r.read())
            sid = body["id"]
            sids.append(sid)
            conn.request("POST", f"/v1/sessions/{sid}/run", json.dumps({"code": "x = 1"}), {"Content-Type": "application/json"})
            conn.getresponse().read()
        time.sleep(1)
        sess = snapshot(srv, base, size)
        print("per idle session (4 alive, each after one call):", fmt(delta(idle, sess, 4)))
        for sid in sids:
            conn.request("DELETE", f"/v1/sessions/{sid}")
            conn.getresponse().read()

        print("\n| workload | peak memory, warm | cold | pids_peak | status |\n|---|---|---|---|---|")
        for name, code, extra in WORKLOADS:
            row = {}
            for start in ("warm", "cold"):
                status, row[start] = post(conn, {"code": code, "start": start, **extra})
            w, c = row["warm"], row["cold"]
            print(f"| {name} | {(w.get('peak_memory_bytes') or 0) / MiB:.1f} MiB | {(c.get('peak_memory_bytes') or 0) / MiB:.1f} MiB "
                  f"| {w.get('pids_peak')}, {c.get('pids_peak')} | {w.get('status')}, {c.get('status')} {w.get('error', '')}{c.get('error', '')} |")


if __name__ == "__main__":
    main()
