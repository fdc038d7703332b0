#!/usr/bin/env python3
"""The system calls of a warm run's bootstrap and init stage (issue 36):
what each costs, for the per-step trace's rows that are not the daemon's.
A daemon of BINARY does 30 kept-alive warm runs of `pass`, then N more
while perf records every CPU; each process is given its part by its place
in the daemon's tree (trace_machine.parse). Run as root:

    python3 scripts/benchmarks/trace_calls.py BINARY [--runs 500] [--calls]

By default, CPU: `perf record -a -g` samples (cpu-clock), each sample of
the bootstrap, the init stage and the zygote given to the system call in
its kernel stack (else page fault, exit, user code), in ms per run.

With --calls: the raw_syscalls tracepoints, each call's entry and exit
paired per thread: how many calls of each kind a run makes, and the time
in them (wall, blocking included: a read that waits counts its wait).
mount(2) is told apart by its flags (new file system, bind, remount,
private).
"""
import argparse, collections, os, re, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib, trace_machine as tm  # noqa: E402

F = 1999
ROLES = ("bootstrap", "init stage", "zygote")
# x86_64's numbers of the calls these processes make.
NR = {0: "read", 1: "write", 3: "close", 7: "poll", 9: "mmap", 10: "mprotect", 11: "munmap", 12: "brk",
      13: "rt_sigaction", 14: "rt_sigprocmask", 16: "ioctl", 33: "dup2", 39: "getpid", 41: "socket",
      44: "sendto", 46: "sendmsg", 47: "recvmsg", 56: "clone", 59: "execve", 61: "wait4", 80: "chdir",
      83: "mkdir", 84: "rmdir", 88: "symlink", 89: "readlink", 90: "chmod", 95: "umask", 110: "getppid",
      112: "setsid", 116: "setgroups", 117: "setresuid", 119: "setresgid", 126: "capset", 137: "statfs",
      155: "pivot_root", 157: "prctl", 158: "arch_prctl", 165: "mount", 166: "umount2", 170: "sethostname",
      171: "setdomainname", 186: "gettid", 218: "set_tid_address", 231: "exit_group", 257: "openat",
      262: "newfstatat", 271: "ppoll", 272: "unshare", 273: "set_robust_list", 292: "dup3", 302: "prlimit64",
      308: "setns", 317: "seccomp", 318: "getrandom", 322: "execveat", 334: "rseq", 428: "open_tree",
      429: "move_mount", 434: "pidfd_open", 435: "clone3", 436: "close_range", 437: "openat2",
      442: "mount_setattr"}


def warm_daemon_record(binary, runs, events):
    """perf's script of N warm runs (events: perf record's arguments),
    and the daemon's and the zygote's pids."""
    d = tempfile.mkdtemp(prefix="agentjail-calls-")
    data = os.path.join(d, "perf.data")
    try:
        with benchlib.daemon(binary, 2) as (srv, sock, conn):
            zygote = None
            for i in range(30):
                benchlib.post_run(conn, "pass", "warm")
            while zygote is None:
                benchlib.post_run(conn, "pass", "warm")
                zygote = tm.find_zygote(srv.pid)
            rec = subprocess.Popen(["perf", "record", "-a", "-o", data] + events,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)
            for _ in range(runs):
                benchlib.post_run(conn, "pass", "warm")
            time.sleep(0.3)
            rec.send_signal(2)
            rec.wait()
        fields = "comm,pid,tid,ip,sym" if "-g" in events else "comm,pid,tid,time,event,trace"
        out = subprocess.run(["perf", "script", "-i", data, "--show-task-events", "-F", fields],
                             capture_output=True, text=True).stdout
        return out, srv.pid, zygote
    finally:
        if os.path.exists(data):
            os.remove(data)
        os.rmdir(d)


def cpu_by_call(binary, runs):
    out, daemon, zygote = warm_daemon_record(binary, runs, ["-g", "-F", str(F), "-e", "cpu-clock"])
    call = re.compile(r"(?:__x64_sys_|__do_sys_|__se_sys_|ksys_)(\w+)")
    rows = collections.defaultdict(collections.Counter)
    for r, frames in tm.parse(out, daemon, zygote):
        if r not in ROLES:
            continue
        name = None
        for f in frames:
            m = call.search(f)
            if m:
                name = m.group(1)
        if tm.has(frames, tm.EXIT):
            name = (name + ", its exit path") if name else "exit"
        elif name is None:
            if tm.has(frames, ("asm_exc_page_fault", "exc_page_fault")):
                name = "page faults"
            elif not tm.has(frames, ("entry_SYSCALL",)):
                name = "user code (and the kernel outside a call)"
            else:
                name = "other"
        rows[r][name] += 1
    print(f"{runs} kept-alive warm runs of `pass`; `perf record -a -g -F {F}`: ms of CPU per run. "
          f"Load: {open('/proc/loadavg').read().strip()}.")
    for r in ROLES:
        c = rows[r]
        print(f"\n| {r}: {sum(c.values()) / F * 1000 / runs:.3f} ms | ms per run |\n|---|---|")
        for k, v in c.most_common(25):
            print(f"| {k} | {v / F * 1000 / runs:.3f} |")


def mount_kind(args):
    m = re.search(r"\(([^)]*)\)", args)
    parts = [p.strip() for p in m.group(1).split(",")] if m else []
    flags = int(parts[3], 16) if len(parts) > 3 else 0
    if flags & 0x20:
        return "mount remount"
    if flags & 0x1000:
        return "mount bind"
    if flags & 0x40000:
        return "mount private"
    return "mount of a new file system"


def calls(binary, runs):
    out, daemon, zygote = warm_daemon_record(binary, runs, ["-e", "raw_syscalls:sys_enter,raw_syscalls:sys_exit"])
    role = {daemon: "daemon", zygote: "zygote"}
    fork = re.compile(r"PERF_RECORD_FORK\((\d+):(\d+)\):\((\d+):(\d+)\)")
    ev = re.compile(r"^\s*(\S+)\s+(\d+)/(\d+)\s+([\d.]+):\s+raw_syscalls:sys_(enter|exit):\s+NR (\d+) (.*)$")
    pending, stats = {}, collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0.0]))
    for line in out.split("\n"):
        if "PERF_RECORD_FORK" in line:
            m = fork.search(line)
            if m and m.group(1) != m.group(3) and int(m.group(1)) not in role:
                child = {"daemon": "bootstrap", "bootstrap": "init stage", "init stage": "init stage",
                         "zygote": "program", "program": "program"}.get(role.get(int(m.group(3))))
                if child:
                    role[int(m.group(1))] = child
            continue
        m = ev.match(line)
        if not m or role.get(int(m.group(2))) not in ("bootstrap", "init stage"):
            continue
        tid, t, nr = int(m.group(3)), float(m.group(4)), int(m.group(6))
        if m.group(5) == "enter":
            pending[tid] = (t, mount_kind(m.group(7)) if nr == 165 else NR.get(nr, f"call {nr}"))
        elif tid in pending:
            t0, k = pending.pop(tid)
            s = stats[role[int(m.group(2))]][k]
            s[0] += 1
            s[1] += t - t0
    print(f"{runs} kept-alive warm runs of `pass`; the raw_syscalls tracepoints. "
          f"Load: {open('/proc/loadavg').read().strip()}.")
    for r in ("bootstrap", "init stage"):
        st = stats[r]
        print(f"\n| {r}: {sum(v[0] for v in st.values()) / runs:.0f} calls a run | per run | µs each (wall) |\n|---|---|---|")
        for k, (n, s) in sorted(st.items(), key=lambda kv: -kv[1][0]):
            print(f"| {k} | {n / runs:.1f} | {s / n * 1e6:.1f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--calls", action="store_true", help="count and time the calls (tracepoints), not CPU samples")
    a = ap.parse_args()
    (calls if a.calls else cpu_by_call)(a.binary, a.runs)


if __name__ == "__main__":
    main()
