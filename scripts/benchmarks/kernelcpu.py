"""The machine's CPU that a benchmark's own processes take, from the
kernel's counters, on a machine that others load at the same time.

Stdlib only; used by scripts/benchmarks/bench_throughput.py and the scripts that
compare daemons. As root, on cgroup v1 with a cpuacct hierarchy (the
project's hosts) or cgroup v2.

What is counted (Meter.sample):

- "group": the CPU time of every process in this benchmark's own cgroup
  and below it (cpuacct.usage, or cpu.stat's usage_usec on v2: the
  scheduler's nanosecond runtime, not ticks). The benchmark moves itself
  there before it starts anything, so it holds whatever the benchmark
  starts: the daemon, its jails (a daemon makes its jails' groups below
  its own), zygotes, bootstraps, python3 children, fork harnesses, floor
  programs, and the client itself.
- "client": this process's own CPU (RUSAGE_SELF), to take out of "group"
  so that a runner's figure is the runner's, not the client's.
- "kthreads": the runtime of every kernel thread (/proc/PID/schedstat,
  per thread, so that kworkers that come and go do not skew the sum):
  kworkers that tear down a network namespace, RCU, ksoftirqd. Nobody
  owns a kernel thread, so this is everyone's; Meter.idle_kthreads
  measures their rate while the benchmark sleeps, which is others' and
  the idle daemon's, to subtract from a pass in proportion to its time.

Left out: interrupt time the kernel does not charge to a task (hard and
soft interrupts), and work the kernel does for us inside other tenants'
processes (none is known). Other tenants' processes are never counted.
"""
import os, resource, time

CG_ROOTS = ("/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup")


def _own_path(controller):
    for line in open("/proc/self/cgroup"):
        _, ctrls, path = line.rstrip("\n").split(":", 2)
        if controller in ctrls.split(",") or (controller == "" and ctrls == ""):
            return path
    return None


def kthreads_ns():
    """{pid: (start time, runtime ns)} of every kernel thread alive now."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read().rsplit(")", 1)[1].split()
            if int(st[6]) & 0x200000 == 0:  # PF_KTHREAD
                continue
            with open(f"/proc/{d}/schedstat") as f:
                out[int(d)] = (st[19], int(f.read().split()[0]))
        except (OSError, ValueError, IndexError):
            continue
    return out


def kthreads_delta(a, b):
    """ns the kernel threads ran between two kthreads_ns(): a thread alive
    at both ends, its growth; one started in between, all of it; one that
    ended in between, nothing (kworkers come and go; what one ran after a
    and before its end is lost: a small undercount)."""
    return sum(ns - a[p][1] if p in a and a[p][0] == st else ns for p, (st, ns) in b.items())


def self_ns():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return int((r.ru_utime + r.ru_stime) * 1e9)


class Meter:
    """This process moved into a fresh cgroup of its own (made below its
    current one); close() moves it back and removes the group."""

    def __init__(self):
        self.v1 = os.path.isdir("/sys/fs/cgroup/cpuacct")
        if self.v1:
            self.home = "/sys/fs/cgroup/cpuacct" + _own_path("cpuacct")
            self.usage = lambda: int(open(os.path.join(self.dir, "cpuacct.usage")).read())
        else:
            self.home = "/sys/fs/cgroup" + _own_path("")
            self.usage = lambda: 1000 * int(next(l.split()[1] for l in open(os.path.join(self.dir, "cpu.stat"))
                                                 if l.startswith("usage_usec ")))
        self.dir = os.path.join(self.home.rstrip("/"), f"agentjail-bench-{os.getpid()}")
        os.mkdir(self.dir)
        try:
            self._move(self.dir)
        except OSError:
            os.rmdir(self.dir)
            raise

    def _move(self, to):
        with open(os.path.join(to, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    def sample(self):
        return {"group": self.usage(), "client": self_ns(), "kthreads": kthreads_ns(), "t": time.perf_counter()}

    def idle_kthreads(self, seconds=0.5):
        """Kernel threads' ns per second while this benchmark sleeps."""
        k, t = kthreads_ns(), time.perf_counter()
        time.sleep(seconds)
        return kthreads_delta(k, kthreads_ns()) / (time.perf_counter() - t)

    @staticmethod
    def delta(a, b, kthread_rate=0.0):
        """ms between two samples: "runner" (the group less the client),
        "client", "kthreads" (all), "kthreads_net" (less the idle rate
        over the same time) and "ours" (runner + kthreads_net)."""
        d = {k: (b[k] - a[k]) / 1e6 for k in ("group", "client")}
        d["kthreads"] = kthreads_delta(a["kthreads"], b["kthreads"]) / 1e6
        d["runner"] = d["group"] - d["client"]
        d["kthreads_net"] = d["kthreads"] - kthread_rate * (b["t"] - a["t"]) / 1e6
        d["ours"] = d["runner"] + d["kthreads_net"]
        return d

    def close(self):
        """Moves this process back; removes the group and whatever empty
        groups are left below it (a daemon that was stopped removes its
        own)."""
        self._move(self.home)
        for root, dirs, _ in os.walk(self.dir, topdown=False):
            for d in dirs:
                try:
                    os.rmdir(os.path.join(root, d))
                except OSError:
                    pass
        try:
            os.rmdir(self.dir)
        except OSError as e:
            print(f"kernelcpu: could not remove {self.dir}: {e}")
