#!/usr/bin/env python3
"""Where the daemon's own CPU goes per run: a daemon of BINARY (built with
symbols: `go build -o /tmp/agentjail ./cmd/agentjail`, not scripts/build,
which strips them) runs N kept-alive runs of `pass` while `perf record -g`
samples it; each sample is put in the first category whose frames it
holds. Then more runs under `strace -c` of each of its threads count its
own system calls per run. Run as root, on a quiet host; prints Markdown
for BENCHMARKS.md:

    python3 scripts/benchmarks/bench_trace.py /tmp/agentjail [--runs 1000] [--start warm]

With --machine, instead: the whole machine's CPU per warm run, step by
step (the daemon by activity, the bootstrap, the init stage, the
zygote's fork, the program, kernel threads, teardown), from `perf record
-a` (scripts/benchmarks/trace_machine.py says how each sample is placed):

    python3 scripts/benchmarks/bench_trace.py /tmp/agentjail --machine [--runs 500] [--code pass]
"""
import argparse, collections, os, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

# First match wins, so the specific come before the general.
CATEGORIES = [
    ("cgroup: create, rename, limits, tasks files", ["cgroup.(*Manager).Create", "cgroup.(*Group).Rename",
                                                    "cgroup.(*Group).JoinFiles", "cgroup.(*Group).setV1",
                                                    "jail).createCgroup", "jail).cgroupAhead"]),
    ("cgroup: delete (rmdir)", ["cgroup.(*Group).Delete"]),
    ("cgroup: read the figures", ["cgroup.(*Group).read", "cgroup.(*Group).Stats", "cgroup.(*Group).CPUTime",
                                  "cgroup.(*Group).OOM", "jail).decide", "watchOOM", "watchCPU"]),
    ("the jail's mount namespace released (the kernel unmounts its tmpfs)", ["jail).cleanup.func1"]),
    ("seccomp notifications' supervisor", ["seccomp.Supervise", "superviseSeccomp"]),
    ("the jail built ahead, its program forked ahead (bootstrap, protocol)", ["warmRuntime).startRun", "jail).forkProgram",
                                                                              "jail).awaitBuild", "bootstrapNested",
                                                                              "preparedPool).keep", "jail).start"]),
    ("the request's delivery (pipes, plan, go)", ["jail).deliver", "jail).sendGo", "jail).goProgram", "jail).sendProg",
                                                  "requestPlan", "programPlan", "adoptPlan"]),
    ("the run's supervision (output, exit, wait)", ["jail).supervise", "jail).receive", "capture", "jail).wait"]),
    ("HTTP, JSON, the request and the result", ["net/http.", "encoding/json", "agentjail/daemon."]),
    ("Go garbage collector", ["gcBgMarkWorker", "runtime.gcDrain", "runtime.bgsweep", "runtime.bgscavenge"]),
    ("Go scheduler, sysmon, netpoll (no frame of ours)", ["runtime."]),
]


def cpu_s(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def runs(conn, n, start):
    for _ in range(n):
        benchlib.post_run(conn, "pass", start)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--start", default="warm", choices=["warm", "cold"])
    ap.add_argument("--machine", action="store_true", help="the whole machine's CPU per warm run, step by step")
    ap.add_argument("--code", default="pass", help="with --machine: the program each run runs")
    a = ap.parse_args()
    if a.machine:
        import trace_machine
        trace_machine.report(a.binary, a.runs, a.code, CATEGORIES)
        return
    d = tempfile.mkdtemp(prefix="agentjail-trace-")
    data, counts = os.path.join(d, "perf.data"), os.path.join(d, "strace.txt")
    with benchlib.daemon(a.binary, 2) as (srv, sock, conn):
        runs(conn, 50, a.start)
        # --no-inherit: the daemon's own threads, not the jails it starts
        # (each jail's bootstrap is its child until it execs).
        rec = subprocess.Popen(["perf", "record", "--no-inherit", "-F", "2000", "-g", "-o", data, "-p", str(srv.pid)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1)
        c0, t0 = cpu_s(srv.pid), time.time()
        runs(conn, a.runs, a.start)
        wall, cpu = time.time() - t0, cpu_s(srv.pid) - c0
        rec.send_signal(2)
        rec.wait()
        # Its threads alive now, not -f: that would follow each jail's
        # bootstrap and init stage, whose calls are not the daemon's. (A
        # thread the runtime starts later is missed.)
        tids = [a for t in os.listdir(f"/proc/{srv.pid}/task") for a in ("-p", t)]
        st = subprocess.Popen(["strace", "-c", "-o", counts] + tids,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1)
        n2 = max(a.runs // 5, 100)
        runs(conn, n2, a.start)
        time.sleep(0.5)
        st.send_signal(2)
        st.wait()
    out = subprocess.run(["perf", "script", "-i", data, "-F", "comm,tid,ip,sym"], capture_output=True, text=True).stdout
    cat, n = collections.Counter(), 0
    for block in out.strip().split("\n\n"):
        frames = block.strip().split("\n")[1:]
        n += 1
        for name, pats in CATEGORIES:
            if any(p in f for f in frames for p in pats):
                cat[name] += 1
                break
        else:
            cat["other"] += 1
    per_run = cpu / a.runs * 1000
    print(f"{a.runs} kept-alive runs of `pass`, `\"start\": \"{a.start}\"`, one client: {wall / a.runs * 1000:.2f} ms each; "
          f"the daemon's CPU (utime+stime) {per_run:.2f} ms per run. `perf record -g -F 2000 -p` of the daemon, "
          f"{n} samples, each in the first category one of its frames matches:")
    print()
    print("| where | share of the daemon's CPU | ms per run |")
    print("|---|---|---|")
    for k, v in cat.most_common():
        print(f"| {k} | {v / n * 100:.1f}% | {v / n * per_run:.2f} |")
    print()
    calls = []
    for line in open(counts):
        f = line.split()
        if len(f) >= 5 and f[0][0].isdigit() and f[-1] != "total":
            calls.append((int(f[3]), f[-1]))
    calls.sort(reverse=True)
    total = sum(c for c, _ in calls)
    print(f"System calls of the daemon's threads per run (`strace -c -p` of each, {n2} more runs): {total / n2:.0f} in all; "
          + ", ".join(f"{name} {c / n2:.1f}" for c, name in calls[:14]) + ".")
    os.remove(data)
    os.remove(counts)
    os.rmdir(d)


if __name__ == "__main__":
    main()
