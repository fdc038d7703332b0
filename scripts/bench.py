"""agentjail benchmark: latency against bare python3, and peak-memory precision.

Stdlib only. Each figure is measured side by side with its baseline in the
same run, interleaved (bare, jail, bare, jail, ...), so that the machine's
drift hits both equally; ratios are what to compare across machines.
"""
import argparse, datetime, json, os, platform, statistics, subprocess, sys, time

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
FOURPROC = '''import os, time
r, w = os.pipe()
kids = []
for i in range(3):
    pid = os.fork()
    if pid == 0:
        b = b"\\x01" * (({n} << 20) // 4); os.read(r, 1); os._exit(0)
    kids.append(pid)
b = b"\\x01" * (({n} << 20) // 4)
time.sleep(0.3)
os.write(w, b"xxx")
for k in kids: os.waitpid(k, 0)
'''


def precision(binary, reps):
    rows = []
    sizes = [0, 16, 64, 256, 1024]
    base = statistics.median(jail_json(binary, "pass", "--memory", "1400MiB")["peak_memory_bytes"] for _ in range(reps))
    fbase = statistics.median(jail_json(binary, FOURPROC.format(n=0), "--memory", "1400MiB")["peak_memory_bytes"] for _ in range(reps))
    for kind, code, extra, b0 in (("anonymous", ALLOC, [], base), ("tmpfs /tmp", TMPFS, ["--tmp-size", "1100MiB", "--file-size", "1100MiB"], base),
                                  ("4 processes × N/4", FOURPROC, [], fbase)):
        for n in sizes:
            peaks = [jail_json(binary, code.format(n=n), "--memory", "1400MiB", *extra)["peak_memory_bytes"] for _ in range(reps)]
            p = statistics.median(peaks)
            delta = (p - b0) / (1 << 20)
            rows.append((kind, n, p / (1 << 20), delta, delta - n))
    return base, fbase, rows


def cgroup_version():
    return "v2" if os.path.exists("/sys/fs/cgroup/cgroup.controllers") else "v1 (hybrid)" if os.path.isdir("/sys/fs/cgroup/memory") else "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    n, reps = (40, 1) if a.quick else (200, 3)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"### {datetime.date.today()} · {platform.node()}")
    print()
    print(f"- machine: {os.cpu_count()} CPUs ({cpu}), {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') >> 30} GiB, Linux {platform.release()}, cgroup {cgroup_version()}")
    print(f"- command: `sudo scripts/bench{' --quick' if a.quick else ''}` ({n} interleaved runs of each side; peaks are medians of {reps})")
    print()
    bare, jail = latency(a.bin, n)
    mb, mj = statistics.median(bare), statistics.median(jail)
    print("| `pass` | median ms | p10 | p90 |")
    print("|---|---|---|---|")
    print(f"| bare `{PY} -I -c pass` | {mb:.2f} | {pct(bare, .1):.2f} | {pct(bare, .9):.2f} |")
    print(f"| `agentjail run -c pass` (local mode) | {mj:.2f} | {pct(jail, .1):.2f} | {pct(jail, .9):.2f} |")
    print(f"| **ratio** (target ≤ 1.5) | **{mj / mb:.2f}** | | |")
    print()
    base, fbase, rows = precision(a.bin, reps)
    print(f"Peak memory (`peak_memory_bytes`): `pass` baseline {base / (1 << 20):.2f} MiB (4-process baseline {fbase / (1 << 20):.2f} MiB); target: peak − baseline = N ± 1 MiB.")
    print()
    print("| program | N MiB | peak MiB | peak − baseline | error MiB |")
    print("|---|---|---|---|---|")
    for kind, n_, p, d, e in rows:
        print(f"| {kind} | {n_} | {p:.2f} | {d:.2f} | {e:+.2f}{'' if abs(e) <= 1 else ' ✗'} |")


if __name__ == "__main__":
    main()
