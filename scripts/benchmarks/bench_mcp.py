#!/usr/bin/env python3
"""agentjail benchmark, `agentjail mcp` (issue 34): what the MCP server adds.

    sudo scripts/benchmarks/bench_mcp.py --bin bin/agentjail [--n 500]
    sudo scripts/bench --mcp     # this, streaming and display in one run

Side by side in one run, interleaved, against one daemon started here: a
warm run of `pass`
- through the daemon directly: POST /v1/run on a kept-alive connection
  (as `agentjail mcp --socket` keeps its own), and on a fresh connection
  per run;
- through `agentjail mcp --socket` kept open over stdio: a tools/call of
  run_python, from the JSON-RPC line written to the answer's line read;
- through `agentjail mcp` without --socket (its own daemon in-process),
  as a further row.
The target: the MCP path at most 1 ms above the daemon's own. Stdlib only;
the daemon helpers are benchlib.py's.
"""
import argparse, json, os, random, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import UnixHTTP, daemon, header, pct, post_run, proc_cpu_ms  # noqa: E402


class MCP:
    """`agentjail mcp ARGS` over stdio, initialized."""

    def __init__(self, binary, *args):
        self.p = subprocess.Popen([binary, "mcp", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench_mcp", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.p.stdin.write(json.dumps(msg).encode() + b"\n")
        self.p.stdin.flush()

    def request(self, method, params):
        self.id += 1
        self.send({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        ans = json.loads(self.p.stdout.readline())
        if "error" in ans:
            sys.exit(f"bench: agentjail mcp: {method}: {ans['error']}")
        return ans["result"]

    def run(self, code="pass"):
        res = self.request("tools/call", {"name": "run_python", "arguments": {"code": code}})
        if res.get("isError") or res["structuredContent"]["status"] != "ok":
            sys.exit(f"bench: agentjail mcp: run_python: {res['content']}")
        return res["structuredContent"]

    def close(self):
        self.p.stdin.close()
        if self.p.wait(timeout=30) != 0:
            sys.exit(f"bench: agentjail mcp exited {self.p.returncode}")


def ms(f):
    t = time.perf_counter()
    res = f()
    return (time.perf_counter() - t) * 1000, res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--n", type=int, default=500, help="runs of each path")
    ap.add_argument("--pause", type=float, default=20, help="ms between two runs (not timed)")
    a = ap.parse_args()
    binary = os.path.abspath(a.bin)
    header(binary, " ".join(sys.argv), "warm `pass`: agentjail mcp against the daemon directly")
    run(binary, a.n, a.pause)


def run(binary, n, pause):
    """Prints the table and the verdict (scripts/bench --mcp calls it)."""
    with daemon(binary, os.cpu_count()) as (srv, sock, conn):
        mcp = MCP(binary, "--socket", sock)
        mcp_env = MCP(binary, "--socket", sock)  # another, so that each one's CPU is one kind of call's
        local = MCP(binary)  # its own daemon, in-process
        local.request("tools/call", {"name": "list_environments", "arguments": {}})  # waits for it to be up

        def fresh():
            c = UnixHTTP(sock)
            try:
                return post_run(c)
            finally:
                c.close()

        def environments():
            conn.request("GET", "/v1/environments")
            r = conn.getresponse()
            r.read()
            return {"start": "no jail"}

        def mcp_environments():
            mcp_env.request("tools/call", {"name": "list_environments", "arguments": {}})
            return {"start": "no jail"}

        paths = {
            "daemon, kept-alive connection": lambda: post_run(conn),
            "daemon, a connection per run": fresh,
            "agentjail mcp --socket (stdio kept open)": mcp.run,
            "agentjail mcp, jails in-process": local.run,
            # The same pair without a jail: what the MCP path adds, without
            # the runs' own spread.
            "daemon, GET /v1/environments": environments,
            "agentjail mcp --socket, list_environments": mcp_environments,
        }
        for _ in range(20):  # warm up every path
            for f in paths.values():
                f()
        times = {k: [] for k in paths}
        starts = {k: set() for k in paths}
        order = list(paths)
        cpu0 = proc_cpu_ms(mcp.p.pid), proc_cpu_ms(mcp_env.p.pid)
        for _ in range(n):
            # A new order each round, and a pause after each run: the
            # daemon forks its warm runs ahead (warm_ahead), and a run
            # that comes right after others waits for a fork instead.
            random.shuffle(order)
            for k in order:
                dt, res = ms(paths[k])
                times[k].append(dt)
                starts[k].add(res.get("start", "?"))
                time.sleep(pause / 1000)
        # Their own CPU (utime+stime) per call: a figure the load
        # inflates less than latency.
        mcp_cpu = (proc_cpu_ms(mcp.p.pid) - cpu0[0]) / n, (proc_cpu_ms(mcp_env.p.pid) - cpu0[1]) / n
        mcp.close()
        mcp_env.close()
        local.close()

    base = statistics.median(times["daemon, kept-alive connection"])
    print(f"A run of `pass`, {n} of each path, interleaved in a random order each round, {pause:g} ms apart; "
          "`start` as each result says:")
    print()
    print("| path | median ms | p10 | p90 | start |")
    print("|---|---|---|---|---|")
    for k, v in times.items():
        print(f"| {k} | {statistics.median(v):.3f} | {pct(v, .1):.3f} | {pct(v, .9):.3f} | {', '.join(sorted(starts[k]))} |")
    print()
    run_mcp, env_mcp = times["agentjail mcp --socket (stdio kept open)"], times["agentjail mcp --socket, list_environments"]
    env = times["daemon, GET /v1/environments"]
    extra = statistics.median(run_mcp) - base
    extra10 = pct(run_mcp, .1) - pct(times["daemon, kept-alive connection"], .1)
    bare = statistics.median(env_mcp) - statistics.median(env)
    # Paired within a round (the two ran a few tens of ms apart): on a
    # loaded machine a steadier figure than the difference of medians.
    paired = statistics.median(m - d for m, d in zip(run_mcp, times["daemon, kept-alive connection"]))
    print(f"agentjail mcp --socket adds to a warm run of `pass`: {extra:+.3f} ms at the median, {extra10:+.3f} ms at p10, "
          f"{paired:+.3f} ms as the median of the differences within a round; "
          f"to a request without a jail {bare:+.3f} ms at the median (target: at most 1 ms). "
          f"agentjail mcp --socket's own CPU per call: {mcp_cpu[0]:.3f} ms a run_python, {mcp_cpu[1]:.3f} ms a list_environments.")


if __name__ == "__main__":
    main()
