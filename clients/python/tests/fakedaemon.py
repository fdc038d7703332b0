"""A fake agentjail daemon for the client's tests: HTTP/1.1 on a Unix
socket, in a thread, answering each request as the test scripts it.

A test sets `daemon.answer` to a function of the request that returns one
of the actions below, and reads `daemon.requests` and `daemon.gone` after.
"""

from __future__ import annotations

import json
import os
import select
import socket
import socketserver
import tempfile
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Union

# The result object of CONTRACT.md §3 with the daemon's extra fields.
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

