"""The blocking client."""

from __future__ import annotations

import errno
import os
import socket as _socket
import struct
import time
import urllib.parse
from types import TracebackType
from typing import Any, Callable, Dict, Generator, Iterable, List, Mapping, Optional, Sequence, Type, Union

from . import _http
from ._remote import Node, remote_from
from ._remote_sync import RemoteMixin
from .stream import Event, EventParser
from .errors import (AgentjailError, DaemonUnavailable, Forbidden, NotFound, ProtocolError, SessionEnded, SessionLost,
                     Timeout)
from .types import (Limits, Result, SessionInfo, SessionResult, SessionState, Tests, build_request,
                    build_session_request, build_session_run)

__all__ = ["Client", "Session", "DEFAULT_SOCKET", "socket_path"]

DEFAULT_SOCKET = "/run/agentjail/agentjail.sock"

# sockaddr_un.sun_path is 108 bytes on Linux, with its terminating NUL.
_MAX_PATH = 107


def socket_path(socket: Union[str, "os.PathLike[str]", None]) -> str:
    """The socket to use: the argument, else $AGENTJAIL_SOCKET, else the default."""
    path = os.fspath(socket) if socket is not None else (os.environ.get("AGENTJAIL_SOCKET") or DEFAULT_SOCKET)
    if len(os.fsencode(path)) > _MAX_PATH:
        raise ValueError(f"socket path is longer than a Unix socket address allows ({_MAX_PATH} bytes): {path}")
    return path


def connect_error(path: str, e: OSError) -> Exception:
    """The client's exception for a failed connect to `path`."""
    if isinstance(e, FileNotFoundError):
        return DaemonUnavailable(f"no agentjail daemon socket at {path} (is `agentjail serve` running? "
                                 "set AGENTJAIL_SOCKET or pass socket=)")
    if isinstance(e, ConnectionRefusedError):
        return DaemonUnavailable(f"the agentjail daemon refused the connection at {path} "
                                 "(a stale socket: the daemon is not running)")
    if isinstance(e, PermissionError):
        return Forbidden(f"permission denied connecting to {path}: this user may not use the daemon's socket")
    if e.errno == errno.ENOTSOCK or isinstance(e, NotADirectoryError):
        return DaemonUnavailable(f"{path} is not a Unix socket")
    return DaemonUnavailable(f"cannot connect to the agentjail daemon at {path}: {e}")


def session_path(session_id: str, tail: str = "") -> str:
    """The URL path of a session; the id is quoted, so no id can name
    another endpoint."""
    if not isinstance(session_id, str) or not session_id:
        raise TypeError(f"a session id must be a non-empty str, not {session_id!r}")
    return "/v1/sessions/" + urllib.parse.quote(session_id, safe="") + tail


def sessions_of(obj: Mapping[str, Any]) -> List[SessionInfo]:
    """The SessionInfos of a GET /v1/sessions answer."""
    items = obj.get("sessions")
    if items is None:
        return []
    if not isinstance(items, list):
        raise ProtocolError(f"GET /v1/sessions: \"sessions\" is a JSON {type(items).__name__}, not a list")
    return [SessionInfo.from_dict(x) for x in items if isinstance(x, Mapping)]


def closed_error(session_id: str) -> SessionEnded:
    return SessionEnded(f"session {session_id} was closed by this client", reason="deleted")


def check_server(sock: _socket.socket, path: str) -> None:
    """The process listening on `path` must be root's (the daemon runs as
    root) or this user's own, before anything is sent: a socket that another
    user put at the path would get the code and answer with made-up
    results. The kernel's SO_PEERCRED tells who listens."""
    pid, uid, _ = struct.unpack("3i", sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, struct.calcsize("3i")))
    if uid != 0 and uid != os.geteuid():
        raise DaemonUnavailable(f"the server at {path} runs as uid {uid} (pid {pid}), neither root nor you: nothing "
                                "was sent; set AGENTJAIL_SOCKET or pass socket= to the agentjail daemon's socket")


class Client(RemoteMixin):
    """A blocking client of the agentjail daemon.

    `socket`: the daemon's Unix socket (default $AGENTJAIL_SOCKET, else
    /run/agentjail/agentjail.sock). `timeout`: seconds for a whole call
    (None: wait as long as the daemon takes, which its own wall-time limit
    bounds); when it passes, the connection is closed — so the daemon kills
    the jail — and Timeout is raised.

    Remote daemons (docs/contract.md §7): `url="https://host:8443"`, or
    `urls=[...]`, or `discover="dns:NAME:PORT"` (NAME's A/AAAA records,
    resolved again every 30 s), with `token=` or `token_file=` (else
    $AGENTJAIL_TOKEN) and `ca=` (a PEM CA file, else the system's);
    `tls_server_name=` (else $AGENTJAIL_TLS_SERVER_NAME) checks every
    node's certificate against that one name instead of the host dialled
    (pods dialled by IP, one certificate naming the Service). With
    none of them and no `socket`, $AGENTJAIL_URL is used when set. Runs
    go to the node with more free slots of two taken at random, and to
    another node when one refuses them before they start; sessions stay
    on their node (SessionLost when it is gone). `Result.node` says where
    a run ran.

    Each call uses its own connection; a Client holds no open resources and
    may be shared between threads.
    """

    def __init__(self, socket: Union[str, "os.PathLike[str]", None] = None, timeout: Optional[float] = None, *,
                 url: Optional[str] = None, urls: Optional[Iterable[str]] = None, discover: Optional[str] = None,
                 token: Optional[str] = None, token_file: Union[str, "os.PathLike[str]", None] = None,
                 ca: Union[str, "os.PathLike[str]", None] = None, tls_server_name: Optional[str] = None) -> None:
        self.remote = remote_from(url, urls, discover, token, token_file, ca, socket,  # type: ignore[arg-type]
                                  tls_server_name=tls_server_name)
        self.socket = socket_path(socket) if self.remote is None else ""
        self.timeout = timeout

    def __repr__(self) -> str:
        if self.remote is not None:
            return f"Client(nodes={[n.address for n in self.remote.nodes()]!r}, timeout={self.timeout!r})"
        return f"Client(socket={self.socket!r}, timeout={self.timeout!r})"

    def run(self, code: Optional[str] = None, *, stdin: Union[str, bytes, None] = None, files: Any = None,
            collect: Union[str, Iterable[str], None] = None,
            limits: Union[Limits, Mapping[str, Any], None] = None,
            tests: Union[Tests, Mapping[str, Any], None] = None,
            env: Optional[Mapping[str, str]] = None,
            on_forbidden_syscall: Optional[str] = None,
            environment: Optional[str] = None,
            start: Optional[str] = None,
            on_output: Optional[Callable[[Event], Any]] = None,
            command: Optional[Sequence[str]] = None) -> Result:
        """Run one program and return its Result (a program that fails or is
        killed is a Result, not an exception). Raises an AgentjailError when
        the daemon refuses the run or cannot be reached.

        `environment` names one of the daemon's environments (its default
        when None); `start` asks for a "warm" or a "cold" start.
        `command`, instead of `code`, is an argv run in the jail, e.g.
        `["bash", "-c", "ls | wc -l"]` (its program found by PATH there; a
        missing one exits 127); it always starts cold.
        `on_output`, when given, is called with each output Event (stdout
        or stderr) as the program writes it: the answer is streamed."""
        body = build_request(code, stdin=stdin, files=files, collect=collect, limits=limits,
                             tests=tests, env=env, on_forbidden_syscall=on_forbidden_syscall,
                             environment=environment, start=start, command=command)
        if on_output is not None:
            return _with_callback(self._stream("/v1/run", body, Result.from_dict), on_output)
        if self.remote is not None:
            obj, node = self._placed("POST", _http.request("POST", "/v1/run", body))
            r = Result.from_dict(obj)
            r.node = node
            return r
        return Result.from_dict(self._call("POST", _http.request("POST", "/v1/run", body)))

    def run_stream(self, code: Optional[str] = None, **kwargs: Any) -> Generator[Event, None, None]:
        """`run` with its output as it comes: an iterator of Events,
        stdout and stderr as the program writes them, then one "result"
        Event with the Result. Takes `run`'s arguments. Nothing is sent
        until the first event is asked for; closing the iterator early (or
        leaving the loop, once it is collected) closes the connection, and
        the daemon cancels the run.

            for e in client.run_stream("print(1)"):
                if e.kind == "result":
                    r = e.result
                else:
                    print(e.data, end="")
        """
        body = build_request(code, **kwargs)
        return self._stream("/v1/run", body, Result.from_dict)

    def session(self, *, environment: Optional[str] = None,
                limits: Union[Limits, Mapping[str, Any], None] = None,
                env: Optional[Mapping[str, str]] = None, files: Any = None,
                idle_timeout_ms: Optional[int] = None, start: Optional[str] = None) -> "Session":
        """Start a session (POST /v1/sessions): a live interpreter whose
        variables, imports and /workspace last from one call to the next.

            with client.session() as s:
                s.run("import math; r = 2")
                s.run("math.pi * r ** 2").value     # '12.566370614359172'

        `limits` are the session's: memory_bytes, pids, tmp_bytes,
        cpu_time_ms (for all its calls together), open_files,
        file_size_bytes. `files` are written into /workspace at the start.
        The session is deleted when the `with` block ends, however it ends,
        or by `close()`; the daemon also ends it after `idle_timeout_ms`
        without a call. Raises TooManySessions when the daemon holds as many
        as it allows."""
        body = build_session_request(environment=environment, limits=limits, env=env, files=files,
                                     idle_timeout_ms=idle_timeout_ms, start=start)
        data = _http.request("POST", "/v1/sessions", body)
        if self.remote is not None:
            obj, _ = self._placed("POST", data)
            return Session(self, SessionInfo.from_dict(obj))
        return Session(self, SessionInfo.from_dict(self._call("POST", data)))

    def sessions(self) -> List[SessionInfo]:
        """GET /v1/sessions: this caller's sessions (of every node that
        answers, when remote)."""
        data = _http.request("GET", "/v1/sessions")
        if self.remote is not None:
            return [s for obj in self._each("GET", data) for s in sessions_of(obj)]
        return sessions_of(self._call("GET", data))

    def attach_session(self, session_id: str) -> "Session":
        """A Session for an existing id (from `sessions()`, or kept from an
        earlier process), without asking the daemon anything."""
        session_path(session_id)
        return Session(self, SessionInfo(id=session_id))

    def health(self) -> Dict[str, Any]:
        """GET /v1/health: {"status": "ok", "version", "cgroup", "running", "queued"}
        (of the first node that answers, when remote)."""
        if self.remote is not None:
            return self._first("GET", _http.request("GET", "/v1/health"))
        return self._call("GET", _http.request("GET", "/v1/health"))

    def _call(self, method: str, data: bytes) -> Dict[str, Any]:
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        parser = _http.ResponseParser(method)
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            self._connect(sock, deadline)
            resp = self._exchange(sock, data, parser, deadline)
        finally:
            sock.close()
        return _http.result_of(resp)

    def _connect(self, sock: _socket.socket, deadline: Optional[float]) -> None:
        delay = 0.001
        while True:
            try:
                self._settimeout(sock, deadline)
                sock.connect(self.socket)
                check_server(sock, self.socket)
                return
            except BlockingIOError:
                # The daemon's listen backlog is full. A blocking socket
                # waits in the kernel; one with a timeout gets EAGAIN at
                # once (a Unix connect is never "in progress"): poll.
                if deadline is not None and time.monotonic() + delay >= deadline:
                    raise Timeout(f"no connection to {self.socket} within {self.timeout} s: "
                                  "the daemon's listen backlog stayed full") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
            except _socket.timeout:
                raise Timeout(f"no connection to {self.socket} within {self.timeout} s") from None
            except OSError as e:
                raise connect_error(self.socket, e) from None

    def _exchange(self, sock: _socket.socket, data: bytes, parser: _http.ResponseParser,
                  deadline: Optional[float]) -> _http.Response:
        try:
            self._send(sock, data, deadline)
            while True:
                self._settimeout(sock, deadline)
                chunk = sock.recv(65536)
                if not chunk:
                    return parser.eof()
                resp = parser.feed(chunk)
                if resp is not None:
                    return resp
        except _socket.timeout:
            raise Timeout(f"the agentjail daemon did not answer within {self.timeout} s; "
                          "the connection is closed, so the run is cancelled") from None
        except ConnectionResetError:
            raise DaemonUnavailable("the agentjail daemon reset the connection before it answered") from None
        except OSError as e:
            raise DaemonUnavailable(f"lost the connection to the agentjail daemon: {e}") from None

    def _send(self, sock: _socket.socket, data: bytes, deadline: Optional[float]) -> None:
        try:
            view = memoryview(data)
            while view:
                self._settimeout(sock, deadline)
                n = sock.send(view)
                view = view[n:]
        except (BrokenPipeError, ConnectionResetError):
            # The daemon may answer early (413) and close without reading
            # the whole body: its answer, if any, is still readable.
            pass

    def _stream(self, path: str, body: Dict[str, Any], make: Callable[[Any], Any]) -> Generator[Event, None, None]:
        """POST body, asking for a stream, and yield its events; the
        socket is closed when the generator ends or is closed."""
        if self.remote is not None:
            yield from self._remote_stream(path, body, make)
            return
        body["stream"] = True
        data = _http.request("POST", path, body)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        parser = EventParser(make)
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            self._connect(sock, deadline)
            try:
                self._send(sock, data, deadline)
            except _socket.timeout:
                raise Timeout(f"the agentjail daemon did not answer within {self.timeout} s; "
                              "the connection is closed, so the run is cancelled") from None
            while not parser.finished:
                chunk = self._recv(sock, deadline)
                yield from (parser.feed(chunk) if chunk else parser.eof())
        finally:
            sock.close()

    def _recv(self, sock: _socket.socket, deadline: Optional[float]) -> bytes:
        try:
            self._settimeout(sock, deadline)
            return sock.recv(65536)
        except _socket.timeout:
            raise Timeout(f"the agentjail daemon did not answer within {self.timeout} s; "
                          "the connection is closed, so the run is cancelled") from None
        except ConnectionResetError:
            raise DaemonUnavailable("the agentjail daemon reset the connection before it answered") from None
        except OSError as e:
            raise DaemonUnavailable(f"lost the connection to the agentjail daemon: {e}") from None

    @staticmethod
    def _settimeout(sock: _socket.socket, deadline: Optional[float]) -> None:
        if deadline is None:
            sock.settimeout(None)
            return
        left = deadline - time.monotonic()
        if left <= 0:
            raise _socket.timeout()
        sock.settimeout(left)


class Session:
    """A session of the daemon: one live interpreter in its own jail, for
    many calls. Made by `Client.session()`; a context manager that deletes
    the session when its block ends.

    `id` ("s-" and a ULID), `environment`, `start` ("warm" or "cold"),
    `limits`, `idle_timeout_ms` and `expires_at` are the daemon's answer to
    the creation. `state` is the SessionState of the last call (None before
    the first), `closed` whether `close()` has deleted it.

    Calls of one session run one at a time (a second concurrent call is
    SessionBusy); a Session may be shared between threads otherwise.
    """

    def __init__(self, client: Client, info: SessionInfo) -> None:
        self._client = client
        self.id = info.id
        self.environment = info.environment
        self.start = info.start
        self.limits = info.limits
        self.idle_timeout_ms = info.idle_timeout_ms
        self.expires_at = info.expires_at
        self.extra = info.extra
        self.node = info.node  # the node that holds it, "" on the Unix socket
        self.endpoint = info.endpoint
        self.state: Optional[SessionState] = None
        self.closed = False
        self._node: Optional[Node] = None
        if client.remote is not None:
            self._node = client._node_of(self.id, self.endpoint)
            self.node = self.node or self._node.name

    def _call(self, method: str, data: bytes) -> Dict[str, Any]:
        if self._node is not None:
            return self._client._on_session(self.id, self._node, method, data)
        return self._client._call(method, data)

    def __repr__(self) -> str:
        return f"<agentjail Session {self.id}{' closed' if self.closed else ''}>"

    def run(self, code: Optional[str] = None, *, stdin: Union[str, bytes, None] = None, files: Any = None,
            collect: Union[str, Iterable[str], None] = None,
            tests: Union[Tests, Mapping[str, Any], None] = None,
            limits: Union[Limits, Mapping[str, Any], None] = None,
            on_output: Optional[Callable[[Event], Any]] = None,
            command: Optional[Sequence[str]] = None) -> SessionResult:
        """Run `code` in the session's interpreter (POST /v1/sessions/{id}/run).

        `limits` are this call's: wall_time_ms, cpu_time_ms, output_bytes.
        `command`, instead of `code`, is an argv run as a process of the
        session's jail; its exit status is the call's.
        A call that raises, or is interrupted by its own limits, is a
        SessionResult like any other (`session.alive` says whether the
        session lives on). Raises SessionEnded (with `.reason`) when the
        session has ended, SessionBusy when another call is running,
        NotFound when the daemon does not know the id. `on_output` is as
        for `Client.run`."""
        body = build_session_run(code, stdin=stdin, files=files, collect=collect, tests=tests, limits=limits,
                                 command=command)
        if self.closed:
            raise closed_error(self.id)
        if on_output is not None:
            return _with_callback(self.run_stream(code, stdin=stdin, files=files, collect=collect, tests=tests,
                                                  limits=limits, command=command), on_output)
        r = SessionResult.from_dict(self._call("POST", _http.request("POST", session_path(self.id, "/run"), body)))
        r.node = self.node
        if isinstance(r.session, SessionState):
            self.state = r.session
        return r

    def run_stream(self, code: Optional[str] = None, **kwargs: Any) -> Generator[Event, None, None]:
        """`run` as an iterator of Events, as `Client.run_stream`; the
        last one's `result` is the SessionResult."""
        body = build_session_run(code, **kwargs)
        if self.closed:
            raise closed_error(self.id)
        events = (self._client._remote_stream(session_path(self.id, "/run"), body, SessionResult.from_dict,
                                              self._node, self.id)
                  if self._node is not None else self._client._stream(session_path(self.id, "/run"), body,
                                                                      SessionResult.from_dict))
        for e in events:
            if e.kind == "result" and isinstance(e.result.session, SessionState):
                self.state = e.result.session
            yield e

    def info(self) -> SessionInfo:
        """GET /v1/sessions/{id}: calls, times, memory now and at its peak,
        CPU time, whether it is alive."""
        if self.closed:
            raise closed_error(self.id)
        return SessionInfo.from_dict(self._call("GET", _http.request("GET", session_path(self.id))))

    def close(self) -> None:
        """Delete the session (DELETE /v1/sessions/{id}): its interpreter,
        processes and files go. Idempotent; a session the daemon no longer
        knows or that already ended (404, 410) is not an error."""
        if self.closed:
            return
        try:
            self._call("DELETE", _http.request("DELETE", session_path(self.id)))
        except (NotFound, SessionEnded, SessionLost):
            pass  # gone already: with its node, for SessionLost
        self.closed = True

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, typ: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        if typ is None:
            self.close()
            return
        # The block raised: its exception is the one to see. A failure to
        # delete is not raised over it (the daemon ends the session at its
        # idle timeout).
        try:
            self.close()
        except AgentjailError:
            pass


def _with_callback(events: Generator[Event, None, None], on_output: Callable[[Event], Any]) -> Any:
    """The result of a stream of events, each output event given to
    on_output first. The stream is closed when this returns or raises."""
    try:
        for e in events:
            if e.kind == "result":
                return e.result
            on_output(e)
    finally:
        events.close()
    raise ProtocolError("the daemon's streamed answer ended without its result")
