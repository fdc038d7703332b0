"""The client side of scripts/k8stest: agentjail's Python client (and raw
HTTPS requests where a check needs one node or a bad request), run from
the test's client network namespace, whose resolv.conf names the test's
DNS server (scripts/k8s/dns.py). Each subcommand is one check; it prints
what it saw and exits 1 when the check fails.

    python3 checks.py SUBCOMMAND [ARGS]    (environment: see CONF below)
"""

import json
import os
import socket
import ssl
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
import agentjail  # noqa: E402
from agentjail import _remote  # noqa: E402

NAME = os.environ["K8S_NAME"]  # the headless Service's DNS name
PORT = int(os.environ["K8S_PORT"])
CA = os.environ["K8S_CA"]
TOKEN_FILE = os.environ["K8S_TOKEN_FILE"]  # the token the checks use
NODES = os.environ["K8S_NODES"].split()  # the pods' addresses, n1's first
SHORT = "print('hi')"
HOLD = 8  # seconds a run holding a slot sleeps (below the daemon's default wall time limit)


def token():
    with open(TOKEN_FILE) as f:
        return f.read().strip()


def client():
    # A name that does not resolve fails the client at once; the test's DNS
    # server has been seen to answer no address for a moment (both
    # endpoints not ready at once, under load): say so and try again.
    for i in range(20):
        try:
            return agentjail.Client(discover=f"dns:{NAME}:{PORT}", token=token(), ca=CA, timeout=60)
        except agentjail.DaemonUnavailable as e:
            print(f"note: {e}; again in 0.5 s", flush=True)
            time.sleep(0.5)
    fail(f"{NAME} did not resolve for 10 s")


def fail(msg):
    print("FAIL:", msg, flush=True)
    sys.exit(1)


def ok(msg):
    print("ok:", msg, flush=True)


def raw(addr, method, path, body=None, tok=None, timeout=60, tls=True):
    """One HTTP/1.1 request to the node at addr (TLS checked against the
    Service's name): (status, headers, parsed body or text)."""
    s = socket.create_connection((addr, PORT), timeout=timeout)
    if tls:
        ctx = ssl.create_default_context(cafile=CA)
        s = ctx.wrap_socket(s, server_hostname=NAME)
    data = b"" if body is None else json.dumps(body).encode()
    head = f"{method} {path} HTTP/1.1\r\nHost: {NAME}:{PORT}\r\nConnection: close\r\nContent-Length: {len(data)}\r\n"
    if body is not None:
        head += "Content-Type: application/json\r\n"
    if tok is not None:
        head += f"Authorization: Bearer {tok}\r\n"
    s.sendall(head.encode() + b"\r\n" + data)
    out = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        out += chunk
    s.close()
    head, _, rest = out.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1]) if lines and len(lines[0].split()) > 1 else 0
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    if headers.get("transfer-encoding") == "chunked":
        body, rest2 = b"", rest
        while rest2:
            n, _, rest2 = rest2.partition(b"\r\n")
            n = int(n, 16)
            if n == 0:
                break
            body, rest2 = body + rest2[:n], rest2[n + 2:]
        rest = body
    try:
        return status, headers, json.loads(rest)
    except ValueError:
        return status, headers, rest.decode("utf-8", "replace")


def capacity(addr):
    st, h, b = raw(addr, "GET", "/v1/capacity", tok=token())
    if st != 200:
        fail(f"GET /v1/capacity on {addr}: {st} {b}")
    return b


def node_name(addr):
    return capacity(addr)["node"]


def cmd_spread(n="20"):
    """Two ready endpoints, and runs landing on both nodes."""
    c = client()
    found = _remote.resolve(NAME, PORT)
    if len(found) != 2:
        fail(f"{NAME} resolves to {found}, not two nodes")
    ok(f"{NAME} resolves to two nodes: {[a for _, a in found]}")
    seen = {}
    for i in range(int(n)):
        r = c.run(f"print({i} * 2)")
        if r.status != "ok" or r.stdout != f"{i * 2}\n":
            fail(f"run {i}: {r.status} {r.stdout!r} {r.stderr[-300:]!r}")
        seen[r.node] = seen.get(r.node, 0) + 1
    if len(seen) != 2:
        fail(f"{n} runs landed on {seen}: not on both nodes")
    ok(f"{n} runs, all ok, on both nodes: {seen}")


def cmd_sessions():
    """Sessions stay on their node for every call; a call sent to the
    wrong node is 421 session_elsewhere naming the holder."""
    c = client()
    names = {node_name(a): a for a in NODES}
    # Two sessions a node: one made on a node that has two already is
    # closed again (a node keeps admission.max_sessions at most).
    sessions, refused, placed_again = [], [], 0
    for _ in range(30):
        try:
            s = c.session()
        except agentjail.TooManySessions as e:
            refused.append(str(e))
            continue
        if sum(1 for x in sessions if x.info().node == s.info().node) >= 2:
            s.close()
            placed_again += 1
            time.sleep(1.1)  # the client asks both nodes' load again after a second
        else:
            sessions.append(s)
        if len(sessions) == 4:
            break
    if refused:
        print(f"note: {len(refused)} session starts were refused (TooManySessions) and not tried on the other node: "
              f"{refused[0]}", flush=True)
    holders = {s.id: s.info().node for s in sessions}
    if len(set(holders.values())) != 2:
        fail(f"{len(sessions)} sessions all on one node: {holders}")
    for s in sessions:
        s.run("n = 0")
        for k in range(1, 4):
            r = s.run("n += 1\nn")
            if r.status != "ok" or r.value != str(k) or r.node != holders[s.id]:
                fail(f"session {s.id} (on {holders[s.id]}), call {k}: status {r.status} value {r.value!r} node {r.node!r}")
    ok(f"{len(sessions)} sessions on both nodes ({sorted(set(holders.values()))}), each kept its state "
       f"and ran every call on its node ({placed_again} more landed on a node that had two already and were closed)")
    s = sessions[0]
    other = [a for n, a in names.items() if n != holders[s.id]][0]
    st, h, b = raw(other, "POST", f"/v1/sessions/{s.id}/run", {"code": "n"}, tok=token())
    code = b.get("error", {}).get("code") if isinstance(b, dict) else None
    if st != 421 or code != "session_elsewhere" or holders[s.id] not in json.dumps(b):
        fail(f"a call for {s.id} (on {holders[s.id]}) sent to {other}: {st} {b}, not 421 session_elsewhere naming the holder")
    ok(f"a call for a session of {holders[s.id]} sent to the other node: 421 {code}: {b['error'].get('message', '')}")
    for s in sessions:
        s.close()


def cmd_auth():
    """No token and a wrong token: 401 on every endpoint but health, the
    same answer; plain HTTP to the TLS port fails."""
    for addr in NODES:
        bodies = set()
        for method, path, body in (("GET", "/v1/capacity", None), ("POST", "/v1/run", {"code": SHORT}),
                                   ("POST", "/v1/sessions", {}), ("GET", "/v1/sessions", None),
                                   ("GET", "/metrics", None)):
            for tok in (None, "wrong-" + token()[:8], ""):
                st, h, b = raw(addr, method, path, body, tok=tok)
                if st != 401:
                    fail(f"{method} {path} on {addr} with token {tok!r}: {st}, not 401")
                bodies.add(json.dumps(b, sort_keys=True))
        if len(bodies) != 1:
            fail(f"{addr}: the 401 answers differ: {bodies}")
        st, h, b = raw(addr, "GET", "/v1/health")
        if st != 200:
            fail(f"GET /v1/health without a token on {addr}: {st} {b}")
        st, h, b = raw(addr, "POST", "/v1/run", {"code": SHORT}, tok=token())
        if st != 200 or b.get("status") != "ok":
            fail(f"a run with the right token on {addr}: {st} {b}")
        try:
            st, h, b = raw(addr, "POST", "/v1/run", {"code": SHORT}, tok=token(), tls=False, timeout=10)
        except OSError as e:
            st, b = 0, str(e)
        if st == 200:
            fail(f"plain HTTP to the TLS port of {addr} ran: {b}")
        ok(f"{addr}: 401 with no, empty or wrong token on 5 endpoints (one answer: {bodies.pop()}); "
           f"health 200 without; plain HTTP to the TLS port: {st or b!r} {str(b)[:60]!r}")


def cmd_token(tok, want, wait="0"):
    """Every node answers `want` (200 or 401) to TOKEN, within WAIT s."""
    want, deadline, start = int(want), time.monotonic() + float(wait), time.monotonic()
    left = list(NODES)
    while True:
        left = [a for a in left if raw(a, "GET", "/v1/capacity", tok=tok)[0] != want]
        if not left:
            ok(f"token {tok[:6]}…: {want} on every node after {time.monotonic() - start:.1f} s")
            return
        if time.monotonic() > deadline:
            fail(f"token {tok[:6]}…: not {want} on {left} after {wait} s")
        time.sleep(1)


def hold(addr, n, secs, out):
    """n runs of `secs` seconds sent straight to addr, each in a thread;
    their (status, body) appended to out."""
    code = f"import time\ntime.sleep({secs})\nprint('held')"
    body = {"code": code, "limits": {"wall_time_ms": int(secs * 1000) + 1500}}

    def one():
        try:
            out.append(raw(addr, "POST", "/v1/run", body, tok=token(), timeout=secs + 60))
        except OSError as e:
            out.append((0, {}, str(e)))
    ts = [threading.Thread(target=one) for _ in range(n)]
    for t in ts:
        t.start()
    return ts


def wait_running(addr, n, secs=20):
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        cap = capacity(addr)
        if cap["running"] >= n:
            return cap
        time.sleep(0.2)
    fail(f"{addr}: {n} runs not running after {secs} s: {capacity(addr)}")


def cmd_spill(n="12"):
    """With n1's slots all taken by long runs, runs spill to n2 and none fails."""
    full, free = NODES
    cap = capacity(full)
    slots, full_name = cap["slots"], cap["node"]
    held = []
    ts = hold(full, slots, HOLD, held)
    wait_running(full, slots)
    c = client()
    seen, start = {}, time.monotonic()
    for i in range(int(n)):
        r = c.run(f"print({i})")
        if r.status != "ok":
            fail(f"run {i} while {full_name} is full: {r.status} {r.stderr[-300:]!r}")
        seen[r.node] = seen.get(r.node, 0) + 1
    took = time.monotonic() - start
    for t in ts:
        t.join()
    bad = [h for h in held if h[0] != 200 or h[2].get("status") != "ok"]
    if bad:
        fail(f"the runs holding {full_name}'s slots: {bad[:2]}")
    if seen.get(full_name):
        fail(f"{seen.get(full_name)} of {n} runs went to {full_name}, whose {slots} slots were all taken: {seen}")
    ok(f"{full_name}'s {slots} slots held by {HOLD} s runs: {n} runs all ok in {took:.1f} s, all on the other node ({seen})")


class Loop:
    """Short runs through the client, one after another, in a thread,
    each recorded as (time, node, error)."""

    def __init__(self):
        self.c = client()
        self.log = []
        self.stop = False
        self.t = threading.Thread(target=self.go)
        self.t.start()

    def go(self):
        i = 0
        while not self.stop:
            t = time.time()  # wall clock: compared with the mtimes of the test's signal files
            try:
                r = self.c.run(f"print({i})")
                self.log.append((t, r.node, "" if r.status == "ok" and r.stdout == f"{i}\n" else f"status {r.status}"))
            except agentjail.AgentjailError as e:
                self.log.append((t, "", f"{type(e).__name__}: {e}"))
            i += 1
            time.sleep(0.05)

    def end(self):
        self.stop = True
        self.t.join()
        return self.log


def wait_file(path, secs):
    deadline = time.monotonic() + secs
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            fail(f"{path} did not appear in {secs} s")
        time.sleep(0.1)
    return os.path.getmtime(path)


def cmd_kill(ready_file, killed_file, back_file):
    """kill -9 of n1's daemon (done by the test when READY_FILE appears):
    runs keep succeeding on n2, n1's session fails explicitly."""
    target, other = NODES
    tname, oname = node_name(target), node_name(other)
    c = client()
    sess = None
    tries = []
    for _ in range(12):
        try:
            s = c.session()
        except agentjail.TooManySessions as e:
            tries.append(str(e))
            continue
        tries.append(s.info().node)
        if s.info().node == tname:
            sess = s
            break
        s.close()
    if sess is None:
        fail(f"no session landed on {tname} in 12 tries: {tries}; capacity: {capacity(target)} {capacity(other)}")
    sess.run("x = 1")
    held = []
    hold(target, 1, HOLD, held)  # a jail in flight when the daemon dies
    wait_running(target, 1)
    loop = Loop()
    time.sleep(2)
    open(ready_file, "w").close()
    killed = wait_file(killed_file, 60)
    time.sleep(1)
    try:
        r = sess.run("x")
        fail(f"a call of {tname}'s session after its daemon was killed answered: {r.status} {r.value!r}")
    except agentjail.SessionLost as e:
        # Either the daemon is still down, or kubelet restarted it already
        # and its successor (same pod, same node name) answers 410
        # session_lost for a session made before it started.
        ok(f"{tname}'s session after the kill: SessionLost: {e}")
    except agentjail.AgentjailError as e:
        fail(f"a call of {tname}'s session after its daemon was killed: {type(e).__name__}: {e} (want SessionLost)")
    back = wait_file(back_file, 120)
    time.sleep(3)
    log = loop.end()
    during = [x for x in log if killed <= x[0] <= back]
    errs = [x for x in log if x[2]]
    # A run sent to n1 in the instant of the kill may die with it: the only
    # error allowed, within a second of the kill.
    late = [x for x in errs if abs(x[0] - killed) > 1.0]
    if late or len(errs) > 1:
        fail(f"runs failed during the kill: {errs[:3]}")
    on_other = sum(1 for x in during if x[1] == oname and not x[2])
    if on_other < 3:
        fail(f"only {on_other} runs succeeded on {oname} while {tname}'s daemon was down")
    ok(f"{len(log)} runs, {len(errs)} failed ({errs[0][2][:100] if errs else ''}); in the {back - killed:.1f} s "
       f"from the kill to the restarted daemon's endpoint being ready, {on_other} ok on {oname}, "
       f"{sum(1 for x in during if x[1] == tname)} ok on {tname}")
    r = c.run(SHORT)
    if r.status != "ok":
        fail("a run after the restart: " + r.status)


def cmd_drain(ready_file, back_file):
    """n1's pod deleted while runs are in flight there: they finish; the
    client sees no 5xx (a 503 draining is retried on n2)."""
    target, other = NODES
    tname = node_name(target)
    held = []
    hold(target, 2, 6, held)
    wait_running(target, 2)
    loop = Loop()
    probes = []

    def probe():  # straight to n1: what a client that does not retry would see
        while not loop.stop:
            try:
                st, h, b = raw(target, "GET", "/v1/health", timeout=5)
                probes.append((st, b if st != 200 else ""))
            except OSError as e:
                probes.append((0, type(e).__name__))
            time.sleep(0.1)
    pt = threading.Thread(target=probe)
    pt.start()
    time.sleep(1)
    open(ready_file, "w").close()
    wait_file(back_file, 180)
    time.sleep(2)
    log = loop.end()
    pt.join()
    bad = [h for h in held if h[0] != 200 or h[2].get("status") != "ok"]
    if bad or len(held) != 2:
        fail(f"runs in flight on {tname} when its pod was deleted: {[(h[0], h[2]) for h in held]}")
    errs = [x for x in log if x[2]]
    if errs:
        fail(f"the client saw errors while {tname} drained: {errs[:3]}")
    draining = [p for p in probes if p[0] == 503]
    other5xx = [p for p in probes if p[0] >= 500 and p[0] != 503]
    if other5xx or any("draining" not in json.dumps(p[1]) for p in draining):
        fail(f"{tname}'s health during the drain: {other5xx[:2] or draining[:2]}")
    if not draining:
        fail(f"{tname}'s health never answered 503 draining during the drain: {sorted(set(p[0] for p in probes))}")
    ok(f"2 runs in flight on {tname} finished ok; {len(log)} client runs, none failed "
       f"({sum(1 for x in log if x[1] == tname)} on {tname}); health answered 503 draining {len(draining)} times")


def cmd_kubelet(stop_file, left_file, refresh, served_file):
    """n2's kubelet stopped (by the test when STOP_FILE appears): once its
    endpoint has left the Service, and the test's DNS server serves the
    set without it (SERVED_FILE: its sets, each with the time it began),
    the client stops sending there within its refresh interval."""
    target = NODES[1]
    tname = node_name(target)
    loop = Loop()
    time.sleep(2)
    open(stop_file, "w").close()
    stopped = os.path.getmtime(stop_file)
    left = wait_file(left_file, 120)
    served = None  # when the DNS server began to answer without the target
    deadline = time.monotonic() + 30
    while served is None and time.monotonic() < deadline:
        with open(served_file) as f:
            for line in f:
                t, *addrs = line.split()
                if float(t) >= stopped and target not in addrs:
                    served = float(t)
                    break
        time.sleep(0.2)
    if served is None:
        loop.end()
        fail(f"the test's DNS server still answered {target} 30 s after its endpoint left")
    gone = max(left, served)
    time.sleep(max(0.0, gone + float(refresh) + 3 - time.time()))
    log = loop.end()
    errs = [x for x in log if x[2]]
    if errs:
        fail(f"runs failed: {errs[:3]}")
    after = [x for x in log if x[0] > gone + float(refresh) + 1]
    there = [x for x in after if x[1] == tname]
    if not after or there:
        fail(f"{len(there)} of {len(after)} runs went to {tname} more than {refresh} s after its endpoint left "
             f"and the DNS server stopped answering it ({served - left:+.1f} s from its leaving)")
    last = max((x[0] for x in log if x[1] == tname), default=gone)
    ok(f"{len(log)} runs, none failed; the last on {tname} {last - gone:+.1f} s from its endpoint leaving "
       f"(the DNS server followed {served - left:+.1f} s from its leaving; the client's refresh is {refresh} s); "
       f"{len(after)} after that, none on {tname}")


if __name__ == "__main__":
    globals()["cmd_" + sys.argv[1]](*sys.argv[2:])
