"""A fake agentjail daemon for the client's tests: HTTP/1.1 on a Unix
socket, in a thread, answering each request as the test scripts it.

A test sets `daemon.answer` to a function of the request that returns one
of the actions below, and reads `daemon.requests` and `daemon.gone` after.
`FakeSessions` is such a function: it simulates the session endpoints.
"""

from __future__ import annotations

import ast
import base64
import builtins
import glob
import io
import json
import os
import select
import shutil
import socket
import socketserver
import tempfile
import threading
import time
import traceback
import urllib.parse
import weakref
from typing import Any, Callable, Dict, List, Optional, Union

# The result object of docs/contract.md §3 with the daemon's extra fields.
RESULT: Dict[str, Any] = {
    "id": "j-01HZXTEST",
    "status": "ok",
    "exit_code": 0,
    "signal": "",
    "kill_reason": "",
    "seccomp": None,
    "stdout": "45\n",
    "stderr": "",
    "stdout_truncated": False,
    "stderr_truncated": False,
    "wall_time_ms": 31.2,
    "cpu_time_ms": 18.4,
    "peak_memory_bytes": 9539584,
    "peak_memory_source": "memory.max_usage_in_bytes",
    "memory_limit_bytes": 268435456,
    "oom_kills": 0,
    "pids_peak": 1,
    "pids_max_hits": 0,
    "exception": None,
    "tests": None,
    "feedback": [],
    "files": [],
}


def result(**fields: Any) -> Dict[str, Any]:
    r = json.loads(json.dumps(RESULT))
    r.update(fields)
    return r


class Request:
    def __init__(self, method: str, path: str, headers: Dict[str, str], body: bytes) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


# Actions an answer function returns.

def reply(status: int, obj: Any, headers: Optional[Dict[str, str]] = None, chunked: bool = False) -> Dict[str, Any]:
    return {"kind": "json", "status": status, "obj": obj, "headers": headers or {}, "chunked": chunked}


def error(status: int, code: str, message: str, headers: Optional[Dict[str, str]] = None,
          **fields: Any) -> Dict[str, Any]:
    """The daemon's error answer; `fields` go into its error object (ended_reason)."""
    return reply(status, {"error": dict({"code": code, "message": message}, **fields)}, headers)


def raw(data: bytes) -> Dict[str, Any]:
    """Send these bytes, then close."""
    return {"kind": "raw", "data": data}


def hold(until: Optional[threading.Event] = None,
         then: Union[Dict[str, Any], Callable[[], Dict[str, Any]], None] = None,
         on_gone: Optional[Callable[[], None]] = None) -> Dict[str, Any]:
    """Answer nothing; wait for the client to close (a cancelled run), then
    call `on_gone`. With `until`: once that event is set, send `then` (an
    action, or a function that makes one) instead."""
    return {"kind": "hold", "until": until, "then": then, "on_gone": on_gone}


REASONS = {200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
           409: "Conflict", 410: "Gone", 413: "Request Entity Too Large", 429: "Too Many Requests",
           500: "Internal Server Error", 503: "Service Unavailable"}


class FakeDaemon:
    def __init__(self, answer: Optional[Callable[[Request], Dict[str, Any]]] = None,
                 max_body: Optional[int] = None) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="ajfake-")
        self.path = os.path.join(self._dir.name, "s.sock")
        self.answer = answer or (lambda req: reply(200, RESULT))
        self.max_body = max_body  # answer 413 before reading a larger body, like the daemon
        self.requests: List[Request] = []
        self.gone = threading.Event()  # a held client closed its connection
        self.received = threading.Event()  # a request arrived
        self._server: Optional[socketserver.UnixStreamServer] = None
        self._thread: Optional[threading.Thread] = None

    def __enter__(self) -> "FakeDaemon":
        fake = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                fake._handle(self.request)

        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True
            block_on_close = True

        self._server = Server(self.path, Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05})
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
        self._dir.cleanup()

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = conn.recv(65536)
            if not chunk:
                return
            buf += chunk
        head, _, rest = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        length = int(headers.get("content-length", "0"))
        if self.max_body is not None and length > self.max_body:
            self.requests.append(Request(method, path, headers, b""))
            self.received.set()
            self._send(conn, error(413, "too_large", f"request body larger than {self.max_body} bytes"))
            return
        body = rest
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                return
            body += chunk
        req = Request(method, path, headers, body)
        self.requests.append(req)
        self.received.set()
        self._send(conn, self.answer(req))

    def _send(self, conn: socket.socket, action: Dict[str, Any]) -> None:
        kind = action["kind"]
        if kind == "raw":
            conn.sendall(action["data"])
            return
        if kind == "hold":
            until, then, on_gone = action.get("until"), action.get("then"), action.get("on_gone")
            deadline = time.monotonic() + 30
            try:
                while time.monotonic() < deadline:
                    if until is not None and until.is_set():
                        self._send(conn, then() if callable(then) else (then or reply(200, RESULT)))
                        return
                    readable, _, _ = select.select([conn], [], [], 0.01)
                    if readable and not conn.recv(65536):
                        if on_gone is not None:
                            on_gone()
                        self.gone.set()
                        return
            except (socket.timeout, OSError):
                pass
            return
        status = action["status"]
        body = b"" if status == 204 else json.dumps(action["obj"]).encode()
        head = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}", "Content-Type: application/json",
                "Connection: close"]
        head += [f"{k}: {v}" for k, v in action["headers"].items()]
        if status == 204:
            payload = b""
        elif action["chunked"]:
            head.append("Transfer-Encoding: chunked")
            parts = [body[i:i + 7] for i in range(0, len(body), 7)]
            payload = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"
        else:
            head.append(f"Content-Length: {len(body)}")
            payload = body
        conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + payload)


# ---------------------------------------------------------------- sessions


def _rfc3339(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class FakeSessions:
    """The run and session endpoints of the daemon, simulated: an answer
    function for FakeDaemon (`FakeDaemon(FakeSessions())`).

    Each session keeps a real namespace and runs its calls' code with
    `exec`, here in the test process: the code is the tests' own, trusted.
    So state lasts across calls, the trailing expression gives `value`, an
    exception is a call with status "error" that the session survives, and
    SystemExit ends the session ("exited"). Each session has a workspace
    directory of its own: the request's `files` are written there, the
    code's `open` of a relative path opens there, and `collect` returns
    what matches there. Some first lines act as the jail would:

        # hold      the call runs until `release` is set or the client
                    leaves (then the call is cancelled, the session lives);
                    meanwhile the session is busy (409)
        # memory    the call is killed by the session's memory limit,
                    which ends the session ("memory_limit")
        # wall      the call passes its wall time and is interrupted;
                    the session lives

    Requests are checked as the daemon checks them: unknown fields, limits
    that are not the session's (or the call's), an unknown environment or
    start are 400s; unknown ids 404; a call to an ended session 410 with
    `ended_reason`; a call while another runs 409; more than
    `max_sessions` sessions 429 `too_many_sessions` with Retry-After. A
    session idle for longer than its `idle_timeout_ms` ends
    ("idle_timeout"). An ended session stays known, as the daemon keeps it
    for a while: calls to it are 410 with its `ended_reason`, GET answers
    its state (alive false); once deleted, GET is 410 too.
    """

    ENVIRONMENTS = ("default", "venv")
    SESSION_LIMITS = ("memory_bytes", "pids", "tmp_bytes", "cpu_time_ms", "open_files", "file_size_bytes")
    CALL_LIMITS = ("wall_time_ms", "cpu_time_ms", "output_bytes")
    RUN_FIELDS = ("code", "stdin", "files", "collect", "limits", "tests", "env", "on_forbidden_syscall",
                  "environment", "start")
    VALUE_CAP = 1000

    def __init__(self, max_sessions: Optional[int] = None, idle_timeout_ms: int = 600000) -> None:
        self.max_sessions = max_sessions
        self.idle_timeout_ms = idle_timeout_ms
        self.lock = threading.Lock()
        self.sessions: Dict[str, Dict[str, Any]] = {}
        self.release = threading.Event()  # ends the held calls
        self.held = threading.Event()  # a call is being held
        self.deleted: List[str] = []  # ids, in the order DELETE ended them
        self.cancelled: List[str] = []  # ids whose held call's client left
        self._n = 0
        self._root = tempfile.mkdtemp(prefix="ajfake-sessions-")
        weakref.finalize(self, shutil.rmtree, self._root, True)

    def __call__(self, req: Request) -> Dict[str, Any]:
        path = urllib.parse.unquote(req.path)
        body = req.json if req.method in ("POST",) else None
        if path == "/v1/run" and req.method == "POST":
            return self._run(body)
        if path == "/v1/sessions":
            if req.method == "POST":
                return self._create(body)
            if req.method == "GET":
                with self.lock:
                    return reply(200, {"sessions": [self._info(s) for s in self.sessions.values()]})
        if path.startswith("/v1/sessions/"):
            rest = path[len("/v1/sessions/"):]
            sid, _, tail = rest.partition("/")
            with self.lock:
                s = self.sessions.get(sid)
                if s is None:
                    return error(404, "not_found", f"no session {sid}")
                if s["alive"] and not s["busy"] and time.time() - s["last_used"] > s["idle_timeout_ms"] / 1000:
                    self._end(s, "idle_timeout")
                if tail == "run" and req.method == "POST":
                    return self._call(s, body)
                if tail == "" and req.method == "GET":
                    if s["ended_reason"] == "deleted":
                        return self._ended(s)
                    return reply(200, self._info(s))
                if tail == "" and req.method == "DELETE":
                    if not s["alive"]:
                        return self._ended(s)
                    self._end(s, "deleted")
                    self.deleted.append(sid)
                    return reply(204, None)
        return error(404, "not_found", f"no endpoint {req.method} {req.path}")

    # -- checks, as the daemon's

    def _check(self, body: Any, fields: Any, limits: Any) -> Optional[Dict[str, Any]]:
        if not isinstance(body, dict):
            return error(400, "invalid_request", "the body must be a JSON object")
        for k in body:
            if k not in fields:
                return error(400, "invalid_request", f"{k}: unknown field")
        for k, v in (body.get("limits") or {}).items():
            if k not in limits:
                return error(400, "invalid_request", f"limits.{k}: not a limit here (use: {', '.join(limits)})")
            if not isinstance(v, int) or v <= 0:
                return error(400, "invalid_request", f"limits.{k}: must be a positive integer")
        env = body.get("environment")
        if env is not None and env not in self.ENVIRONMENTS:
            return error(400, "invalid_request",
                         f"environment: no environment {env!r} (this daemon has: {', '.join(self.ENVIRONMENTS)})")
        if body.get("start") not in (None, "warm", "cold"):
            return error(400, "invalid_request", "start: must be \"warm\" or \"cold\"")
        return None

    def _run(self, body: Any) -> Dict[str, Any]:
        bad = self._check(body, self.RUN_FIELDS, ("memory_bytes", "wall_time_ms", "cpu_time_ms", "pids",
                                                  "output_bytes", "tmp_bytes", "open_files", "file_size_bytes"))
        if bad:
            return bad
        return reply(200, result(environment=body.get("environment", "default"), start=body.get("start", "cold")))

    def _create(self, body: Any) -> Dict[str, Any]:
        bad = self._check(body, ("environment", "limits", "env", "files", "idle_timeout_ms", "start"),
                          self.SESSION_LIMITS)
        if bad:
            return bad
        idle = body.get("idle_timeout_ms", self.idle_timeout_ms)
        if not isinstance(idle, int) or idle <= 0:
            return error(400, "invalid_request", "idle_timeout_ms: must be a positive integer")
        with self.lock:
            alive = sum(1 for s in self.sessions.values() if s["alive"])
            if self.max_sessions is not None and alive >= self.max_sessions:
                return error(429, "too_many_sessions",
                             f"{alive} sessions are alive, the most this daemon keeps (admission.max_sessions)",
                             {"Retry-After": "1"})
            self._n += 1
            sid = "s-01JFAKE" + f"{self._n:018d}"
            limits = {"memory_bytes": 268435456, "pids": 64, "tmp_bytes": 67108864, "cpu_time_ms": 60000,
                      "open_files": 256, "file_size_bytes": 33554432}
            limits.update(body.get("limits") or {})
            now = time.time()
            ws = os.path.join(self._root, sid)
            os.mkdir(ws)

            def ws_open(file: Any, *args: Any, **kw: Any) -> Any:
                if isinstance(file, str) and not os.path.isabs(file):
                    file = os.path.join(ws, file)
                return builtins.open(file, *args, **kw)
            s = {"id": sid, "environment": body.get("environment", "default"), "start": body.get("start", "warm"),
                 "limits": limits, "idle_timeout_ms": idle, "created": now, "last_used": now, "calls": 0,
                 "alive": True, "ended_reason": "", "busy": False, "env": dict(body.get("env") or {}),
                 "workspace": ws, "ns": {"__name__": "__main__", "__builtins__": builtins, "open": ws_open}}
            self._write(s, body.get("files") or [])
            self.sessions[sid] = s
            return reply(201, self._created(s))

    # -- answers

    def _created(self, s: Dict[str, Any]) -> Dict[str, Any]:
        return {"id": s["id"], "environment": s["environment"], "limits": s["limits"],
                "idle_timeout_ms": s["idle_timeout_ms"], "start": s["start"],
                "expires_at": _rfc3339(s["last_used"] + s["idle_timeout_ms"] / 1000)}

    def _info(self, s: Dict[str, Any]) -> Dict[str, Any]:
        d = self._created(s)
        d.update({"created": _rfc3339(s["created"]), "last_used": _rfc3339(s["last_used"]), "calls": s["calls"],
                  "alive": s["alive"], "ended_reason": s["ended_reason"], "memory_bytes": 9 << 20 if s["alive"] else 0,
                  "peak_memory_bytes": 12 << 20, "cpu_time_ms": 20.5 * s["calls"]})
        return d

    def _state(self, s: Dict[str, Any]) -> Dict[str, Any]:
        return {"id": s["id"], "calls": s["calls"], "alive": s["alive"], "ended_reason": s["ended_reason"]}

    def _ended(self, s: Dict[str, Any]) -> Dict[str, Any]:
        return error(410, "session_ended", f"session {s['id']} has ended ({s['ended_reason']})",
                     ended_reason=s["ended_reason"])

    def _end(self, s: Dict[str, Any], reason: str) -> None:
        s["alive"], s["ended_reason"], s["busy"] = False, reason, False
        s["ns"] = {}
        shutil.rmtree(s["workspace"], ignore_errors=True)

    def _write(self, s: Dict[str, Any], files: List[Dict[str, Any]]) -> None:
        for f in files:
            path = os.path.join(s["workspace"], f["path"])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            data = (base64.b64decode(f["content"]) if f.get("encoding") == "base64"
                    else f["content"].encode("utf-8"))
            with open(path, "wb") as out:
                out.write(data)

    def _collect(self, s: Dict[str, Any], patterns: List[str]) -> List[Dict[str, Any]]:
        found = set()
        for p in patterns:
            found.update(glob.glob(os.path.join(s["workspace"], p)))
        out = []
        for path in sorted(found):
            with open(path, "rb") as f:
                data = f.read()
            entry: Dict[str, Any] = {"path": os.path.relpath(path, s["workspace"]), "size": len(data)}
            try:
                entry.update(encoding="utf-8", content=data.decode("utf-8"))
            except UnicodeDecodeError:
                entry.update(encoding="base64", content=base64.b64encode(data).decode())
            out.append(entry)
        return out

    # -- one call

    def _call(self, s: Dict[str, Any], body: Any) -> Dict[str, Any]:
        if not s["alive"]:
            return self._ended(s)
        if s["busy"]:
            return error(409, "session_busy", f"session {s['id']} is running a call; one call at a time")
        bad = self._check(body, ("code", "stdin", "files", "collect", "tests", "limits"), self.CALL_LIMITS)
        if bad:
            return bad
        self._write(s, body.get("files") or [])
        s["calls"] += 1
        s["last_used"] = time.time()
        code = body["code"]
        first = code.split("\n", 1)[0].strip()
        if first == "# hold":
            s["busy"] = True
            self.held.set()

            def released() -> Dict[str, Any]:
                with self.lock:
                    s["busy"] = False
                    return reply(200, self._result(s, result(), None))

            def gone() -> None:
                with self.lock:
                    s["busy"] = False
                    self.cancelled.append(s["id"])
            return hold(until=self.release, then=released, on_gone=gone)
        if first == "# memory":
            self._end(s, "memory_limit")
            return reply(200, self._result(s, result(
                status="killed", exit_code=137, signal="SIGKILL", kill_reason="memory_limit",
                feedback=["The program was killed because it used more than its memory limit of 256.0 MiB "
                          "(peak 256.0 MiB); use less memory, e.g. process data in chunks or use generators."]), None))
        if first == "# wall":
            return reply(200, self._result(s, result(
                status="killed", exit_code=137, signal="SIGKILL", kill_reason="wall_timeout",
                feedback=["The call was interrupted after running for 1.0 s of wall-clock time, its limit."]), None))
        r = self._exec(s, code)
        if s["alive"] and body.get("collect"):
            r["files"] = self._collect(s, body["collect"])
        return reply(200, r)

    def _exec(self, s: Dict[str, Any], code: str) -> Dict[str, Any]:
        out = io.StringIO()
        ns = s["ns"]

        def fake_print(*args: Any, **kw: Any) -> None:
            kw.setdefault("file", out)
            print(*args, **kw)
        ns["print"] = fake_print
        value = None
        try:
            tree = ast.parse(code, "/code/main.py")
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            exec(compile(tree, "/code/main.py", "exec"), ns)
            if last is not None:
                v = eval(compile(last, "/code/main.py", "eval"), ns)
                value = repr(v)[:self.VALUE_CAP]
        except SystemExit as e:
            code_ = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            self._end(s, "exited")
            return self._result(s, result(status="ok" if code_ == 0 else "error", exit_code=code_,
                                          stdout=out.getvalue()), None)
        except Exception as e:  # the call's own exception: the session lives
            tb = traceback.format_exc()
            line = getattr(e, "lineno", None) or (traceback.extract_tb(e.__traceback__)[-1].lineno
                                                   if e.__traceback__ else 0)
            exc = {"type": type(e).__name__, "message": str(e), "line": line, "traceback": tb}
            return self._result(s, result(status="error", exit_code=1, stdout=out.getvalue(), stderr=tb,
                                          exception=exc, feedback=[f"{type(e).__name__} at line {line}: {e}."]),
                                None)
        return self._result(s, result(stdout=out.getvalue()), value)

    def _result(self, s: Dict[str, Any], r: Dict[str, Any], value: Optional[str]) -> Dict[str, Any]:
        r.update(id="j-01JFAKECALL" + f"{s['calls']:015d}", environment=s["environment"], start=s["start"],
                 value=value, session=self._state(s))
        return r
