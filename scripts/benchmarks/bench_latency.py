"""scripts/bench's default figures: `agentjail run -c pass` (local mode)
against bare python3, the same through a daemon (latency, idle RSS,
daemon CPU per run, throughput), cold and warm starts side by side, and
the peak-memory precision table (scripts/vm/precision judges it in the VM
suite). bench.py calls main; it imports the helpers of benchlib only.
"""
import json, os, statistics, subprocess, sys, threading, time

from benchlib import PY, UnixHTTP, daemon, pct, post_run, print_start_modes, proc_cpu_ms, proc_rss, start_modes, timed


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


def daemon_bench(binary, n):
    """End-to-end latency through the socket, throughput, idle RSS and
    daemon CPU per run, against a daemon started here."""
    with daemon(binary, os.cpu_count()) as (srv, sock, conn):
        time.sleep(1)
        idle_rss = proc_rss(srv.pid)
        idle_anon = proc_rss(srv.pid, "RssAnon")

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
        return bare, keep, conn1, cli, (idle_rss, idle_anon), cpu_per_run, tput


def main(binary, n, reps, npass):
    """Prints the tables: n interleaved runs of each side, peaks the
    medians of reps, npass runs of each start."""
    bare, jail = latency(binary, n)
    mb, mj = statistics.median(bare), statistics.median(jail)
    print("| `pass` | median ms | p10 | p90 |")
    print("|---|---|---|---|")
    print(f"| bare `{PY} -I -c pass` | {mb:.2f} | {pct(bare, .1):.2f} | {pct(bare, .9):.2f} |")
    print(f"| `agentjail run -c pass` (local mode) | {mj:.2f} | {pct(jail, .1):.2f} | {pct(jail, .9):.2f} |")
    print(f"| **ratio** (target ≤ 2.0) | **{mj / mb:.2f}** | | |")
    print()
    bare, keep, conn1, cli, (idle_rss, idle_anon), cpu_per_run, tput = daemon_bench(binary, n)
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
    # The file-backed part is the binary's own pages: how many of them a
    # fault maps depends on the page cache's state of the file (a fresh
    # build's large folios map more), up to 2.5 MiB between two copies
    # of one binary. The anonymous part is what the daemon allocated.
    print(f"| idle RSS after 10 runs | {idle_rss / (1 << 20):.1f} MiB (anonymous {idle_anon / (1 << 20):.1f}, "
          f"the rest the binary's file pages) | < 20 MiB |")
    print(f"| daemon CPU per run (its own utime+stime; jails excluded) | {cpu_per_run:.2f} ms | ≤ 1.5 ms |")
    for clients, total, rps in tput:
        print(f"| throughput, {clients} concurrent client(s), {total} runs of `pass` | {rps:.0f} runs/s | |")
    print()
    print_start_modes(start_modes(binary, npass))
    base, fbase, rows = precision(binary, reps)
    print(f"Peak memory (`peak_memory_bytes`): `pass` baseline {base / (1 << 20):.2f} MiB (4-process baseline {fbase / (1 << 20):.2f} MiB); target: peak − baseline = N ± 1 MiB, plus the program's page tables, which the kernel charges (about 2 MiB per GiB).")
    print()
    print("| program | N MiB | peak MiB | peak − baseline | error MiB |")
    print("|---|---|---|---|---|")
    for kind, n_, p, d, e in rows:
        print(f"| {kind} | {n_} | {p:.2f} | {d:.2f} | {e:+.2f}{'' if -1 <= e <= 1 + 2 * n_ / 1024 else ' ✗'} |")

