"""Where a warm run's machine CPU goes, step by step: `python3
scripts/benchmarks/bench_trace.py BINARY --machine` (a binary with symbols).

N kept-alive warm runs of CODE while `perf record -a -g` samples every
CPU (cpu-clock at F Hz: a sample is 1/F s of one CPU's time). Each sample
is given to the process it hit, and the process to its part in a run by
its place in the daemon's process tree (perf's fork and exec events):

- the daemon (its threads), by activity (bench_trace.CATEGORIES);
- the bootstrap: a child of the daemon (vfork, exec of the binary, the
  dynamic loader, the C constructor that makes the user namespace);
- the init stage: what the bootstrap forks (the pid namespace's maker,
  the run's pid 1: the jail's mounts, the request's files);
- the zygote: its fork of the program (the page tables copied apart);
- the program: the zygote's child, from its fork to its end (joining the
  namespaces, the dry walk, then the request); the part before its
  request is told apart by the waiting programs' runtime (schedstat);
- kernel threads (everyone's: less their idle rate), by what they run;
- any sample in a process's exit path (do_exit, exit_mmap, a namespace's
  release) is teardown, whoever's process it is.

Samples outside these (other tenants, this client) are left out. The
kernel's own count (scripts/benchmarks/kernelcpu.py) of the same runs is printed
beside, to show how much of it the samples account for.
"""
import collections, contextlib, os, re, subprocess, tempfile, time

import benchlib, kernelcpu

F = 1999
EXIT = ("do_exit", "do_group_exit", "exit_mmap", "free_nsproxy", "put_mnt_ns", "cleanup_mnt", "mntput_no_expire",
        "exit_task_namespaces", "release_task", "__mmput")
EXEC = ("do_execveat", "load_elf_binary", "begin_new_exec", "_dl_", "dl_main", "_dl_start", "bprm_execve")
PAGETABLES = ("copy_page_range", "dup_mmap", "copy_pte_range", "copy_p4d_range", "copy_pmd_range")
KTHREAD_KINDS = [("network namespace cleanup", ("cleanup_net", "ops_exit", "unregister_netdevice")),
                 ("cgroup release, free", ("css_", "cgroup_", "mem_cgroup")),
                 ("RCU callbacks, grace periods", ("rcu_",)),
                 ("mounts, namespaces, files freed", ("delayed_mntput", "cleanup_mnt", "free_nsproxy", "delayed_fput",
                                                      "__fput", "destroy_inode", "kill_litter_super")),
                 ("softirq (timers, other)", ("run_ksoftirqd", "__do_softirq", "handle_softirqs"))]


def tree_now(root):
    """{pid: ppid} of root's descendants now."""
    kids = collections.defaultdict(list)
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                kids[int(open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1])].append(int(d))
            except OSError:
                pass
    out, todo = {}, [root]
    while todo:
        p = todo.pop()
        for k in kids.get(p, []):
            out[k] = p
            todo.append(k)
    return out


def comm(pid):
    try:
        return open(f"/proc/{pid}/comm").read().strip()
    except OSError:
        return ""


def find_zygote(daemon):
    """The zygote: the python3 in the daemon's tree whose children are the
    programs forked ahead (a python3 below a python3)."""
    t = tree_now(daemon)
    py = {p for p in t if comm(p).startswith("python")}
    for p in py:
        if t[p] in py and t[t[p]] in py:
            return t[p]
    return None


def waiting_program_ns(zygote):
    """The runtime so far of each program the zygote has forked and that
    waits for its request, ns."""
    out = []
    for p, pp in tree_now(zygote).items():
        if pp == zygote:
            try:
                out.append(int(open(f"/proc/{p}/schedstat").read().split()[0]))
            except OSError:
                pass
    return out


def parse(script_out, daemon, zygote):
    """Samples and task events of `perf script --show-task-events`, in
    order; yields (role, frames) for each sample of ours or a kernel
    thread's. A fork event names the forking task, also for a child made
    with CLONE_PARENT."""
    role = {daemon: "daemon", zygote: "zygote"}
    fork = re.compile(r"PERF_RECORD_FORK\((\d+):(\d+)\):\((\d+):(\d+)\)")
    head = re.compile(r"(\S.*?)\s+(\d+)/(\d+)\s*$")
    cur = None

    def done():
        if cur is None:
            return None
        name, pid, frames = cur
        r = role.get(pid)
        if r is None and pid != 0 and is_kthread(pid, name):
            r = "kernel threads"
        return (r, frames) if r else None

    for line in script_out.split("\n"):
        if "PERF_RECORD_" in line:
            m = fork.search(line)
            if m and m.group(1) != m.group(3) and int(m.group(1)) not in role:
                pr = role.get(int(m.group(3)))
                child = {"daemon": "bootstrap", "bootstrap": "init stage", "init stage": "init stage",
                         "zygote": "program", "program": "program"}.get(pr)
                if child:
                    role[int(m.group(1))] = child
            continue
        if line and not line[0].isspace():
            got = done()
            if got:
                yield got
            m = head.match(line)
            cur = (m.group(1), int(m.group(2)), []) if m else None
        elif line.strip() and cur is not None:
            cur[2].append(line)
    got = done()
    if got:
        yield got


_kthread = {}


def is_kthread(pid, name):
    if pid not in _kthread:
        try:
            _kthread[pid] = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[6]) & 0x200000 != 0
        except OSError:  # gone: judge by the names kernel threads have
            _kthread[pid] = bool(re.match(r"(kworker|ksoftirqd|rcu_|kdamond|migration|kswapd|khugepaged)", name))
    return _kthread[pid]


def has(frames, pats):
    return any(p in f for f in frames for p in pats)


def step(r, frames, categories):
    """The row of the table a sample goes to."""
    if r == "kernel threads":
        for name, pats in KTHREAD_KINDS:
            if has(frames, pats):
                return f"kernel threads: {name}"
        return "kernel threads: other"
    if has(frames, EXIT):
        return f"teardown: exits ({r}'s processes)"
    if r == "daemon":
        for name, pats in categories:
            if has(frames, pats):
                return f"daemon: {name}"
        return "daemon: other"
    if r == "bootstrap":
        return "bootstrap: exec of the binary, the dynamic loader" if has(frames, EXEC) else \
            "bootstrap: the C constructor (user namespace, uid, maps)"
    if r == "zygote":
        return "zygote: fork, the page tables copied" if has(frames, PAGETABLES) else \
            "zygote: fork's rest, protocol, setns, reaping"
    if r == "init stage":
        return "init stage: pid namespace, mounts, files, signals"
    return "program: its whole life (fork's child side, dry walk, request, Python)"


def trace(binary, runs, code, categories):
    meter = None
    try:  # before the daemon starts, so that it and its jails are in the group
        meter = kernelcpu.Meter()
    except OSError as e:
        print(f"(the kernel's own count is n/a: {e})")
    d = tempfile.mkdtemp(prefix="agentjail-mtrace-")
    data = os.path.join(d, "perf.data")
    with contextlib.ExitStack() as stack:  # its callbacks run last first
        stack.callback(os.rmdir, d)
        stack.callback(lambda: os.path.exists(data) and os.remove(data))
        if meter:
            stack.callback(meter.close)
        srv, sock, conn = stack.enter_context(benchlib.daemon(binary, 2))
        for _ in range(30):
            benchlib.post_run(conn, code, "warm")
        zygote = find_zygote(srv.pid)
        # The programs' runtime before their request: read just before each request.
        pre = []
        for _ in range(60):
            time.sleep(0.01)
            pre += waiting_program_ns(zygote)[:1]
            benchlib.post_run(conn, code, "warm")
        rate = meter.idle_kthreads() if meter else 0.0
        # The same recording of the daemon idle first, for the kernel
        # threads' idle rate by row (others' work, mostly).
        idle_out, idle_s, _, _ = record(data, lambda: time.sleep(3.0), meter)
        out, rec_s, wall, (k0, k1) = record(data, lambda: [benchlib.post_run(conn, code, "warm") for _ in range(runs)], meter)
    kern = kernelcpu.Meter.delta(k0, k1, rate) if meter else None
    return srv.pid, zygote, pre, wall, kern, rate, out, (idle_out, idle_s, rec_s)


def record(data, work, meter):
    """`perf record -a -g` of every CPU while work() runs: (perf script's
    text, seconds recorded, seconds work took, the meter's samples just
    before work and 0.3 s after it). perf itself runs outside this
    benchmark's cgroup, so that the meter does not count it."""
    home = meter.home if meter else None

    def outside():
        if home:
            with open(os.path.join(home, "cgroup.procs"), "w") as f:
                f.write("0")

    rec = subprocess.Popen(["perf", "record", "-a", "-g", "-F", str(F), "-e", "cpu-clock", "-o", data],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=outside)
    time.sleep(1.0)  # perf is up
    k0 = meter.sample() if meter else None
    t0 = time.time()
    work()
    t1 = time.time()
    time.sleep(0.3)  # deferred teardown
    k1 = meter.sample() if meter else None
    t2 = time.time()
    rec.send_signal(2)
    rec.wait()
    out = subprocess.run(["perf", "script", "-i", data, "--show-task-events", "-F", "comm,pid,tid,ip,sym"],
                         capture_output=True, text=True).stdout
    os.remove(data)
    # perf's own second before work is recorded too: the idle recording is
    # scaled by the same rule.
    return out, t2 - t0 + 1.0, t1 - t0, (k0, k1)


def report(binary, runs, code, categories):
    daemon, zygote, pre, wall, kern, rate, out, (idle_out, idle_s, rec_s) = trace(binary, runs, code, categories)
    if zygote is None:
        print("No zygote found in the daemon's tree: no warm runs to trace.")
        return
    rows, idle = collections.Counter(), collections.Counter()
    for r, frames in parse(out, daemon, zygote):
        rows[step(r, frames, categories)] += 1
    for r, frames in parse(idle_out, daemon, zygote):
        if r == "kernel threads":
            idle[step(r, frames, categories)] += 1
    # Kernel threads' rows less what they ran while the daemon was idle,
    # scaled to the recording's length: the rest is this run's.
    ms = {k: (v - idle[k] * rec_s / idle_s) / F * 1000 / runs for k, v in rows.items()}
    # The samples span the recording, longer than the runs: kernel threads'
    # idle rate over the recording is taken out of their rows in proportion.
    pre_ms = sorted(pre)[len(pre) // 2] / 1e6 if pre else float("nan")
    print(f"{runs} kept-alive warm runs of `{code}`, one client, {wall / runs * 1000:.2f} ms each. "
          f"`perf record -a -g -F {F} -e cpu-clock`: {sum(rows.values())} samples of ours or kernel threads; "
          f"ms per run = samples ÷ {F} ÷ runs. Load: {open('/proc/loadavg').read().strip()}.")
    print()
    print(f"Kernel threads' rows are net of the same rows in a {idle_s:.0f} s recording of the daemon idle just "
          f"before (scaled to the {rec_s:.1f} s recorded): others' work mostly, noisy on a loaded machine.")
    print()
    print("| step | ms per run |")
    print("|---|---|")
    for k, v in sorted(ms.items(), key=lambda kv: (kv[0].split(":")[0], -kv[1])):
        print(f"| {k} | {v:.2f} |")
    print(f"| **all the samples above** | **{sum(ms.values()):.2f}** |")
    print()
    print(f"The program before its request (forked ahead: the fork's child side, joining the run's namespaces, the dry "
          f"walk; the runtime of a waiting program, /proc/PID/schedstat, median of {len(pre)}): {pre_ms:.2f} ms; the rest "
          f"of the program's row is its request's run.")
    if kern:
        print(f"The kernel's own count of the same runs (scripts/benchmarks/kernelcpu.py): {kern['runner'] / runs:.2f} ms per run "
              f"in this benchmark's cgroup less the client, kernel threads {kern['kthreads'] / runs:.2f} ms "
              f"({kern['kthreads_net'] / runs:.2f} less their idle rate, {rate / 1e6:.1f} ms/s); "
              f"together {kern['ours'] / runs:.2f} ms.")
    print()
