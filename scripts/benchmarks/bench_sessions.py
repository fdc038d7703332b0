"""agentjail benchmark, sessions (issue 19): `scripts/bench --sessions`.

Side by side in one run, against one daemon started here:
- a call of `x += 1` in a live session, through a kept-alive connection,
  against the same client's own round trip (GET /v1/health on the same
  connection), interleaved: what a call costs beyond talking to the daemon;
- a session's start, warm and cold (POST /v1/sessions, then its DELETE),
  interleaved with bare python3;
- the daemon's memory, fds and CPU per idle session, and what one idle
  session holds in its own cgroup.
Stdlib only; the helpers are benchlib.py's.
"""
import json, os, statistics, time

from benchlib import PY, UnixHTTP, daemon, pct, proc_cpu_ms, proc_rss, timed


def request(conn, method, path, body=None):
    """One request on conn: (status, the answer's JSON or None)."""
    conn.request(method, path, None if body is None else json.dumps(body),
                 {"Content-Type": "application/json"} if body is not None else {})
    r = conn.getresponse()
    data = r.read()
    return r.status, (json.loads(data) if data else None)


def must(status, answer, want, what):
    if status != want:
        raise SystemExit(f"bench: {what}: the daemon answered {status}: {answer}")
    return answer


def create(conn, start=None):
    status, body = request(conn, "POST", "/v1/sessions", {} if start is None else {"start": start})
    return must(status, body, 201, "POST /v1/sessions")


def call(conn, sid, code):
    status, body = request(conn, "POST", f"/v1/sessions/{sid}/run", {"code": code})
    return must(status, body, 200, "a call")


def delete(conn, sid):
    status, body = request(conn, "DELETE", f"/v1/sessions/{sid}")
    must(status, body, 204, "DELETE")


def ms_since(t):
    return (time.perf_counter() - t) * 1000


def calls(conn, srv, n):
    """Interleaved: the client's own round trip (GET /v1/health) and a call
    of `x += 1`, on one kept-alive connection; the daemon's CPU per call."""
    sid = create(conn)["id"]
    call(conn, sid, "x = 0")
    for _ in range(20):  # warm up both paths
        request(conn, "GET", "/v1/health"); call(conn, sid, "x += 1")
    health, run = [], []
    cpu = 0.0
    for _ in range(n):
        t = time.perf_counter(); request(conn, "GET", "/v1/health"); health.append(ms_since(t))
        c0 = proc_cpu_ms(srv.pid)
        t = time.perf_counter(); r = call(conn, sid, "x += 1"); run.append(ms_since(t))
        cpu += proc_cpu_ms(srv.pid) - c0
        if r["status"] != "ok":
            raise SystemExit(f"bench: the call failed: {r}")
    last = call(conn, sid, "x")
    if last["value"] != str(20 + n):
        raise SystemExit(f"bench: the session lost state: x = {last['value']}, want {20 + n}")
    delete(conn, sid)
    return health, run, cpu / n


def starts(conn, n):
    """Interleaved: bare python3, a warm start, a cold start (each session
    deleted after its start: the DELETE is timed apart)."""
    out = {"bare": [], "warm": [], "cold": [], "delete": []}
    seen = {"warm": set(), "cold": set()}
    for i in range(n):
        out["bare"].append(timed([PY, "-I", "-c", "pass"]))
        for start in (("warm", "cold") if i % 2 == 0 else ("cold", "warm")):
            time.sleep(0.02)  # the pool's replacement of a taken jail lands before, not in, the next sample
            t = time.perf_counter()
            sc = create(conn, start)
            out[start].append(ms_since(t))
            seen[start].add(sc["start"])
            t = time.perf_counter()
            delete(conn, sc["id"])
            out["delete"].append(ms_since(t))
    return out, seen


def idle_cost(conn, srv, n):
    """The daemon's RSS, fds and threads before and with n idle sessions
    (each after one call), and what one idle session holds in its cgroup."""
    time.sleep(1)
    rss0, fds0, thr0 = proc_rss(srv.pid), len(os.listdir(f"/proc/{srv.pid}/fd")), len(os.listdir(f"/proc/{srv.pid}/task"))
    ids = []
    for i in range(n):
        sid = create(conn)["id"]
        call(conn, sid, f"x = {i}")
        ids.append(sid)
    time.sleep(1)
    rss1, fds1, thr1 = proc_rss(srv.pid), len(os.listdir(f"/proc/{srv.pid}/fd")), len(os.listdir(f"/proc/{srv.pid}/task"))
    mem = [must(*request(conn, "GET", f"/v1/sessions/{sid}"), 200, "GET")["memory_bytes"] for sid in ids]
    for sid in ids:
        delete(conn, sid)
    return {"n": n, "rss": (rss1 - rss0) / n, "fds": (fds1 - fds0) / n, "threads": (thr1 - thr0) / n,
            "rss0": rss0, "session_mem": statistics.median(m for m in mem if m is not None)}


def main(binary, quick):
    n_calls, n_starts, n_idle = (200, 10, 30) if quick else (1000, 40, 30)
    with daemon(binary, os.cpu_count()) as (srv, sock, conn):
        conn = UnixHTTP(sock)
        health, run, cpu = calls(conn, srv, n_calls)
        st, seen = starts(conn, n_starts)
        idle = idle_cost(conn, srv, n_idle)

    mh, mr = statistics.median(health), statistics.median(run)
    print(f"A call of `x += 1` in a live session, {n_calls} interleaved with the same client's own round trip "
          "(GET /v1/health), one kept-alive connection (the Python client's way):")
    print()
    print("| per request | median ms | p10 | p90 |")
    print("|---|---|---|---|")
    print(f"| GET /v1/health (the client's round trip) | {mh:.3f} | {pct(health, .1):.3f} | {pct(health, .9):.3f} |")
    print(f"| POST /v1/sessions/{{id}}/run `x += 1` | {mr:.3f} | {pct(run, .1):.3f} | {pct(run, .9):.3f} |")
    print(f"| **the call beyond the round trip** | **{mr - mh:.3f}** | | |")
    print(f"| ratio call / round trip | **{mr / mh:.2f}** | | |")
    print()
    print(f"Daemon CPU per call (its own utime+stime): {cpu:.2f} ms.")
    print()
    mb = statistics.median(st["bare"])
    print(f"Session start (POST /v1/sessions, answered once the interpreter is ready), {n_starts} of each, "
          "interleaved with bare python3:")
    print()
    print("| | median ms | p10 | p90 | ratio to bare python3 | the answer's `start` |")
    print("|---|---|---|---|---|---|")
    print(f"| bare `{PY} -I -c pass` | {mb:.2f} | {pct(st['bare'], .1):.2f} | {pct(st['bare'], .9):.2f} | 1.00 | |")
    for s in ("warm", "cold"):
        v = st[s]
        print(f"| `\"start\": \"{s}\"` | {statistics.median(v):.2f} | {pct(v, .1):.2f} | {pct(v, .9):.2f} | "
              f"**{statistics.median(v) / mb:.2f}** | {', '.join(sorted(seen[s]))} |")
    v = st["delete"]
    print(f"| DELETE (the jail removed before the answer) | {statistics.median(v):.2f} | {pct(v, .1):.2f} | {pct(v, .9):.2f} | | |")
    print()
    print(f"Idle sessions: {idle['n']} alive at once, each after one call (daemon RSS {idle['rss0'] / (1 << 20):.1f} MiB before):")
    print()
    print("| per idle session | |")
    print("|---|---|")
    print(f"| daemon RSS | {idle['rss'] / 1024:.0f} KiB |")
    print(f"| daemon fds | {idle['fds']:.1f} |")
    print(f"| daemon threads | {idle['threads']:.2f} |")
    print(f"| the session's own cgroup memory (median) | {idle['session_mem'] / (1 << 20):.1f} MiB |")
    print()
