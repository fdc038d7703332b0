"""The isolation floor, measured beside every throughput benchmark.

What a warm run must cost the machine whatever agentjail does: the
program's own work as the unisolated fork harness does it (measured by
scripts/benchmarks/bench_throughput.py as one of its runners), plus what isolation
adds to that harness's fork:

- fresh user, pid, mount, net, ipc, uts and cgroup namespaces with a
  jail's mount tree in the mount namespace (scripts/benchmarks/nsfloor.c, its last
  row, less its first: a plain fork and exit, which the harness already
  pays): the namespaces' making, their teardown by the kernel's threads,
  and the mount tree's unmounting when the namespace goes;
- a cgroup in each hierarchy, made, limited, joined by the process, read
  and removed (scripts/benchmarks/cgfloor.c, its last row less its first: the same
  child without a group).

Each is measured by the kernel's counters of this benchmark's own cgroup
and the kernel threads (scripts/benchmarks/kernelcpu.py), around the C program run
for one row, in the same rounds as the runners. Stdlib only.
"""
import os, shutil, subprocess, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
N = 150  # iterations per row and round
NS_ROWS = (0, 10)  # nsfloor: a plain fork and exit; all namespaces with a jail's mounts
CG_ROWS = (0, 6)  # cgfloor: a process, no group; a process in a group
SETTLE_S = 0.3  # for the kernel threads' deferred work (a network namespace's cleanup)
# The two measures every figure has (scripts/benchmarks/kernelcpu.py): "runner", the
# processes' CPU only (exact, ours only), and "ours", with the kernel
# threads less their idle rate (complete, but noisy on a loaded machine).
KINDS = ("runner", "ours")


class Floor:
    def __init__(self, meter):
        self.meter, self.tmp = meter, tempfile.mkdtemp(prefix="agentjail-floor-")
        self.dirs, self.error = [], None
        try:
            for prog in ("nsfloor", "cgfloor"):
                subprocess.run(["gcc", "-O2", "-Wall", "-o", os.path.join(self.tmp, prog),
                                os.path.join(HERE, prog + ".c")], check=True, capture_output=True)
            self._cgroup_dirs()
        except (OSError, subprocess.CalledProcessError) as e:
            self.error = f"{e}: {getattr(e, 'stderr', b'') or ''}"
        self.rounds = []

    def _cgroup_dirs(self):
        """A directory per v1 hierarchy the daemon uses, below this process's
        own group in each (its cpuacct group is the meter's)."""
        if not os.path.isdir("/sys/fs/cgroup/cpuacct"):
            raise OSError("the cgroup floor is measured on cgroup v1 hosts only")
        own = {}
        for line in open("/proc/self/cgroup"):
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            for c in ctrls.split(","):
                own[c] = path
        for c in ("memory", "pids", "cpu", "cpuacct"):
            d = f"/sys/fs/cgroup/{c}{own[c].rstrip('/')}/agentjail-floor-{os.getpid()}"
            os.mkdir(d)
            self.dirs.append(d)

    def _one(self, cmd, krate):
        a = self.meter.sample()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        time.sleep(SETTLE_S)
        d = self.meter.delta(a, self.meter.sample(), krate)
        return {k: d[k] / N for k in KINDS}

    def measure(self, krate):
        """One round: ms per iteration of what isolation adds, as {"ns": .., "cg": ..}."""
        if self.error:
            return
        ns = os.path.join(self.tmp, "nsfloor")
        cg = os.path.join(self.tmp, "cgfloor")
        v = [self._one([ns, str(N), "1", str(r)], krate) for r in NS_ROWS]
        w = [self._one([cg, "-r", str(r), str(N), "1", *self.dirs], krate) for r in CG_ROWS]
        self.rounds.append({k: {"ns": v[1][k] - v[0][k], "cg": w[1][k] - w[0][k]} for k in KINDS})

    def close(self):
        for d in self.dirs:
            try:
                os.rmdir(d)
            except OSError as e:
                print(f"bench_floor: could not remove {d}: {e}")
        shutil.rmtree(self.tmp, ignore_errors=True)


def _med(v):
    v = sorted(v)
    return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2 if v else float("nan")


def _rng(v, f="%.2f"):
    return f"{f % _med(v)} ({f % min(v)}–{f % max(v)})" if v else "n/a"


def print_tables(runners, figures, floor, rounds, meter):
    """figures: {(runner key, clients): [phase figures, one per round]},
    each with "kernel" (scripts/benchmarks/kernelcpu.py's delta per program, ms)."""
    print("Machine CPU per program from the kernel's counters (scripts/benchmarks/kernelcpu.py), ms, median (min–max) of the "
          "rounds: the runner's processes are the CPU time of everything in this benchmark's own cgroup "
          "(cpuacct.usage: the daemon, its jails' groups below it, zygotes, bootstraps, python3 children, fork "
          "harnesses) less the client's own (RUSAGE_SELF); kernel threads are every kernel thread's runtime "
          "(/proc/PID/schedstat) less their idle rate measured before each round; each pass ends 0.3 s after its "
          "last result, for the deferred teardown. Other tenants' processes are not in it; interrupt time is not.")
    print()
    print("| runner | clients | ours: runner's processes + kernel threads | runner's processes | kernel threads, "
          "less idle | client |")
    print("|---|---|---|---|---|---|")
    for c in (1, 2):
        for r in runners:
            v = [x["kernel"] for x in figures[(r.key, c)]]
            print(f"| {r.label} | {c} | {_rng([x['ours'] for x in v])} | {_rng([x['runner'] for x in v])} | "
                  f"{_rng([x['kthreads_net'] for x in v])} | {_rng([x['client'] for x in v])} |")
    print()
    if not floor or floor.error or not floor.rounds:
        print("The isolation floor: n/a" + (f" ({floor.error})" if floor and floor.error else "") + ".")
        print()
        return
    keys = {r.key for r in runners}
    print(f"The isolation floor per program, ms (same counters; nsfloor and cgfloor {N} iterations a row, once per "
          f"round, before the round's passes): the fork harness's own figure above, plus what fresh user, pid, mount, "
          f"net, ipc, uts and cgroup namespaces with a jail's 20 mounts add to a fork (scripts/benchmarks/nsfloor.c, its last "
          f"row less its first), plus a cgroup in the memory, pids, cpu and cpuacct hierarchies, made, limited, "
          f"joined, read and removed (scripts/benchmarks/cgfloor.c, its last row less its first). Each twice: the processes' "
          f"CPU alone, and with the kernel threads (less their idle rate).")
    print()
    print("| clients | measure | fork harness | + namespaces, mounts | + cgroup | = the floor |")
    print("|---|---|---|---|---|---|")
    per = {}
    for kind, label in (("runner", "processes"), ("ours", "+ kernel threads")):
        for ci, c in enumerate((1, 2)):
            fl = [x[kind] for x in floor.rounds[ci * rounds:(ci + 1) * rounds]]
            fk = [x["kernel"][kind] for x in figures[("fork", c)]]
            per[(kind, c)] = [f + x["ns"] + x["cg"] for f, x in zip(fk, fl)]
            print(f"| {c} | {label} | {_rng(fk)} | {_rng([x['ns'] for x in fl])} | {_rng([x['cg'] for x in fl])} | "
                  f"{_rng(per[(kind, c)])} |")
    print()
    print("| machine CPU per program ÷ the floor (each round's pair, median (min–max)) | measure | 1 client | 2 clients | target |")
    print("|---|---|---|---|---|")
    for k, label, target in (("warm", "warm through the daemon", "≤ 1.4 at 2 clients"), ("cold", "cold through the daemon", ""),
                             ("plain", "plain python3", "")):
        for kind, kl in (("runner", "processes"), ("ours", "+ kernel threads")):
            if k not in keys:
                print(f"| {label} | {kl} | n/a | n/a | {target} |")
                continue
            cells = [_rng([x["kernel"][kind] / f for x, f in zip(figures[(k, c)], per[(kind, c)])]) for c in (1, 2)]
            print(f"| {label} | {kl} | {cells[0]} | {cells[1]} | {target} |")
    print()
    print("Load: " + open("/proc/loadavg").read().strip() + " (/proc/loadavg at the end of the passes).")
    print()
