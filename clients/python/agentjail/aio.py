"""The asyncio client: the same calls as `Client`, as awaitables, on
the event loop's own socket I/O (no threads, no executor).

Hygiene in the caller's event loop is the point of this module:

- cancelling a run (task.cancel(), asyncio.wait_for, a TaskGroup that
  fails) closes its connection at once — the daemon then kills the jail with
  kill_reason "cancelled" — and CancelledError propagates unchanged;
- a call that is never awaited does nothing and leaves nothing behind:
  `run()` checks its arguments and returns a lazy awaitable that opens no
  connection and creates no coroutine until it is awaited, so dropping it
  gives no "coroutine ... was never awaited" warning;
- a started call that is garbage-collected (its task abandoned) closes its
  socket without awaiting anything, so Python's coroutine clean-up never
  sees an "Exception ignored" error.

Sessions (`AsyncClient.session()`) add one rule: a session is deleted when
its `async with` block ends — normally, by an exception, or because the
task was cancelled. The DELETE runs in a task of its own that a further
cancellation does not stop (the caller's CancelledError is raised once it
is sent and answered), and a session whose task is abandoned in a closed
loop is deleted with a short blocking call when the coroutine is closed,
since nothing can be awaited then.

It uses the loop's socket primitives (loop.sock_sendall, loop.sock_recv) on
a socket it owns rather than StreamReader/StreamWriter: a stream turns a
failed write into an error that hides the daemon's answer already received
(an early 413 to a large body), and closing a stream's transport needs the
loop to run once more, which an abandoned call's loop may never do.
"""

from __future__ import annotations

import asyncio
import collections.abc
import os
import socket as _socket
import urllib.parse
from types import TracebackType
from typing import (Any, AsyncGenerator, Awaitable, Callable, Coroutine, Dict, Generator, Iterable, List, Mapping,
                    Optional, Sequence, Tuple, Type, Union)

from . import _http, _remote_aio
from ._remote import remote_from
from .client import (Client, check_server, closed_error, connect_error, session_path, sessions_of, socket_path)
from .errors import AgentjailError, DaemonUnavailable, NotFound, ProtocolError, SessionEnded, SessionLost, Timeout
from .stream import Event, EventParser
from .types import (Limits, Result, SessionInfo, SessionResult, SessionState, Tests, build_request,
                    build_session_request, build_session_run)

__all__ = ["AsyncClient", "AsyncSession"]

# How long deleting a session may take when the client has no timeout of
# its own, and how long a cancelled caller waits for a session being made
# (to delete it) before it gives up on it.
_CLEANUP_TIMEOUT = 30.0


class _Call(collections.abc.Coroutine):
    """A coroutine made only when first awaited or sent to.

    It is a collections.abc.Coroutine, so asyncio.create_task, TaskGroup,
    gather, wait_for and asyncio.run accept it like a native coroutine.
    """

    __slots__ = ("_make", "_coro", "_name")

    def __init__(self, make: Callable[[], Any], name: str) -> None:
        self._make: Optional[Callable[[], Any]] = make
        self._coro: Any = None
        self._name = name

    def _start(self) -> Any:
        if self._coro is None:
            if self._make is None:
                raise RuntimeError(f"cannot reuse already awaited {self._name}")
            self._coro, self._make = self._make(), None
        return self._coro

    def __await__(self) -> Generator[Any, None, Any]:
        return self._start().__await__()

    def send(self, value: Any) -> Any:
        return self._start().send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        if self._coro is None:
            # Never started: like a native coroutine, raise it right here.
            self._make = None
            exc = typ if isinstance(typ, BaseException) else (typ() if val is None else val)
            raise exc.with_traceback(tb) if tb is not None else exc
        if val is None and tb is None:
            return self._coro.throw(typ)
        return self._coro.throw(typ, val, tb)

    def close(self) -> None:
        self._make = None
        if self._coro is not None:
            self._coro.close()

    def __repr__(self) -> str:
        state = "pending" if self._coro is None and self._make is not None else "started"
        return f"<agentjail {self._name} {state}>"


class AsyncClient:
    """An asyncio client of the agentjail daemon; see `Client` for the
    arguments. `run()` and `health()` return awaitables (accepted by
    create_task and TaskGroup too). Each call has its own connection, so
    calls may run concurrently and a client holds nothing open between them."""

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
            return f"AsyncClient(nodes={[n.address for n in self.remote.nodes()]!r}, timeout={self.timeout!r})"
        return f"AsyncClient(socket={self.socket!r}, timeout={self.timeout!r})"

    def run(self, code: Optional[str] = None, *, stdin: Union[str, bytes, None] = None, files: Any = None,
            collect: Union[str, Iterable[str], None] = None,
            limits: Union[Limits, Mapping[str, Any], None] = None,
            tests: Union[Tests, Mapping[str, Any], None] = None,
            env: Optional[Mapping[str, str]] = None,
            on_forbidden_syscall: Optional[str] = None,
            environment: Optional[str] = None,
            start: Optional[str] = None,
            on_output: Optional[Callable[[Event], Any]] = None,
            command: Optional[Sequence[str]] = None) -> Coroutine[Any, Any, Result]:
        """Run one program; await it for its Result. Argument mistakes raise
        here, at the call; daemon refusals raise when awaited. `on_output`
        (a function, or a coroutine function) is given each output Event as
        the program writes it, as for `Client.run`."""
        body = build_request(
            code, stdin=stdin, files=files, collect=collect, limits=limits, tests=tests, env=env,
            on_forbidden_syscall=on_forbidden_syscall, environment=environment, start=start, command=command)
        data = _http.request("POST", "/v1/run", body)

        async def run() -> Result:
            if on_output is not None:
                return await _with_callback(self._stream("/v1/run", body, Result.from_dict), on_output)
            return Result.from_dict(await self._call("POST", data))
        return _Call(run, "AsyncClient.run()")

    def run_stream(self, code: Optional[str] = None, **kwargs: Any) -> AsyncGenerator[Event, None]:
        """`run` with its output as it comes: an async iterator of Events,
        as `Client.run_stream`. Nothing is sent until it is iterated; close
        it (contextlib.aclosing) to stop early: the connection closes and
        the daemon cancels the run."""
        return self._stream("/v1/run", build_request(code, **kwargs), Result.from_dict)

    async def _stream(self, path: str, body: Dict[str, Any], make: Callable[[Any], Any]) -> AsyncGenerator[Event, None]:
        """POST body asking for a stream and yield its events; the socket
        is closed when the generator ends or is closed. The client's
        timeout bounds the whole answer."""
        body["stream"] = True
        data = _http.request("POST", path, body)
        loop = asyncio.get_running_loop()
        if self.remote is not None:
            sid = path[len("/v1/sessions/"):].split("/")[0] if path.startswith("/v1/sessions/") else ""
            deadline = None if self.timeout is None else loop.time() + self.timeout
            events = _remote_aio.stream(self.remote, path, data, make, urllib.parse.unquote(sid), deadline)
            try:
                async for e in events:
                    yield e
            finally:
                await events.aclose()
            return
        deadline = None if self.timeout is None else loop.time() + self.timeout
        parser = EventParser(make)
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            await _connect(sock, self.socket)
            try:
                await loop.sock_sendall(sock, data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # an early answer (413) is still readable
            while not parser.finished:
                chunk = await self._recv(sock, deadline)
                for e in (parser.feed(chunk) if chunk else parser.eof()):
                    yield e
        finally:
            sock.close()

    async def _recv(self, sock: _socket.socket, deadline: Optional[float]) -> bytes:
        loop = asyncio.get_running_loop()
        try:
            if deadline is None:
                return await loop.sock_recv(sock, 65536)
            return await asyncio.wait_for(loop.sock_recv(sock, 65536), max(0.0, deadline - loop.time()))
        except asyncio.TimeoutError:
            raise Timeout(f"the agentjail daemon did not answer within {self.timeout} s; "
                          "the connection is closed, so the run is cancelled") from None
        except ConnectionResetError:
            raise DaemonUnavailable("the agentjail daemon reset the connection before it answered") from None
        except OSError as e:
            raise DaemonUnavailable(f"lost the connection to the agentjail daemon: {e}") from None

    def health(self) -> Coroutine[Any, Any, Dict[str, Any]]:
        """GET /v1/health."""
        data = _http.request("GET", "/v1/health")
        return _Call(lambda: self._call("GET", data), "AsyncClient.health()")

    def session(self, *, environment: Optional[str] = None,
                limits: Union[Limits, Mapping[str, Any], None] = None,
                env: Optional[Mapping[str, str]] = None, files: Any = None,
                idle_timeout_ms: Optional[int] = None, start: Optional[str] = None) -> "_SessionOpener":
        """Start a session; see `Client.session`. Use it as

            async with client.session() as s:
                r = await s.run("x = 1")

        which deletes the session when the block ends, or `s = await
        client.session()` and `await s.close()`. Nothing is sent until it
        is awaited or entered. A caller cancelled while the daemon makes
        the session deletes it before the cancellation goes on."""
        data = _http.request("POST", "/v1/sessions", build_session_request(
            environment=environment, limits=limits, env=env, files=files, idle_timeout_ms=idle_timeout_ms,
            start=start))
        return _SessionOpener(self, data)

    def sessions(self) -> Coroutine[Any, Any, List[SessionInfo]]:
        """GET /v1/sessions: this caller's sessions."""
        data = _http.request("GET", "/v1/sessions")

        async def sessions() -> List[SessionInfo]:
            return sessions_of(await self._call("GET", data))
        return _Call(sessions, "AsyncClient.sessions()")

    def attach_session(self, session_id: str) -> "AsyncSession":
        """An AsyncSession for an existing id, without asking the daemon anything."""
        session_path(session_id)
        return AsyncSession(self, SessionInfo(id=session_id))

    async def _call(self, method: str, data: bytes) -> Dict[str, Any]:
        if self.remote is not None:
            if self.timeout is None:
                return await _remote_aio.route(self.remote, method, data)
            try:
                return await asyncio.wait_for(_remote_aio.route(self.remote, method, data), self.timeout)
            except asyncio.TimeoutError:
                raise Timeout(f"the agentjail nodes did not answer within {self.timeout} s; "
                              "the connection is closed, so the run is cancelled") from None
        if self.timeout is None:
            resp = await self._exchange(method, data)
        else:
            try:
                resp = await asyncio.wait_for(self._exchange(method, data), self.timeout)
            except asyncio.TimeoutError:
                raise Timeout(f"the agentjail daemon did not answer within {self.timeout} s; "
                              "the connection is closed, so the run is cancelled") from None
        return _http.result_of(resp)

    async def _exchange(self, method: str, data: bytes) -> _http.Response:
        loop = asyncio.get_running_loop()
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            await _connect(sock, self.socket)
            try:
                await loop.sock_sendall(sock, data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # an early answer (413) is still readable, as in Client
            parser = _http.ResponseParser(method)
            while True:
                try:
                    chunk = await loop.sock_recv(sock, 65536)
                except ConnectionResetError:
                    raise DaemonUnavailable("the agentjail daemon reset the connection before it answered") from None
                except OSError as e:
                    raise DaemonUnavailable(f"lost the connection to the agentjail daemon: {e}") from None
                if not chunk:
                    return parser.eof()
                resp = parser.feed(chunk)
                if resp is not None:
                    return resp
        finally:
            # Synchronous on purpose: it works the same when the call ends,
            # is cancelled, or is collected (GeneratorExit) after its loop
            # closed. The loop's own wait on this socket is already gone:
            # a sock_* future's clean-up runs before the awaiting task resumes.
            sock.close()


async def _connect(sock: _socket.socket, path: str) -> None:
    """Connect a non-blocking Unix socket. A Unix connect never runs in the
    background: it succeeds, or fails with EAGAIN while the daemon's listen
    backlog is full. (loop.sock_connect would take EAGAIN as "in progress"
    and report a socket that is not connected as connected.)"""
    delay = 0.001
    while True:
        try:
            sock.connect(path)
            check_server(sock, path)
            return
        except (BlockingIOError, InterruptedError):
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)
        except OSError as e:
            raise connect_error(path, e) from None


async def _complete(coro: Awaitable[Any], grace: float) -> Tuple["asyncio.Task[Any]", Optional[BaseException]]:
    """Run `coro` in a task of its own to its end, even when the caller is
    cancelled meanwhile. Returns the finished task and the CancelledError
    the caller received (None if it was not cancelled), for the caller to
    raise once it has dealt with the task's outcome. After a cancellation,
    the task gets `grace` seconds more, then it is cancelled too."""
    loop = asyncio.get_running_loop()
    task = loop.create_task(coro)  # type: ignore[arg-type]
    cancel: Optional[BaseException] = None
    deadline: Optional[float] = None
    while not task.done():
        timeout = None
        if deadline is not None:
            timeout = deadline - loop.time()
            if timeout <= 0:
                task.cancel()
                timeout = 0.05
        try:
            await asyncio.wait({task}, timeout=timeout)
        except asyncio.CancelledError as e:
            if cancel is None:
                cancel = e
                deadline = loop.time() + grace
    return task, cancel


def _outcome(task: "asyncio.Task[Any]") -> Optional[BaseException]:
    """The task's exception (retrieved, so asyncio does not log it)."""
    if task.cancelled():
        return asyncio.CancelledError()
    return task.exception()


class _SessionOpener(_Call):
    """What `AsyncClient.session()` returns: await it for an AsyncSession,
    or enter it (`async with`) to have the session deleted at the end of
    the block."""

    __slots__ = ("_client", "_data", "_session")

    def __init__(self, client: AsyncClient, data: bytes) -> None:
        super().__init__(self._open, "AsyncClient.session()")
        self._client = client
        self._data = data
        self._session: Optional[AsyncSession] = None

    async def _open(self) -> "AsyncSession":
        client = self._client
        task, cancel = await _complete(client._call("POST", self._data), _CLEANUP_TIMEOUT)
        exc = _outcome(task)
        if cancel is not None:
            # Cancelled while the daemon made it: delete what it made, then go.
            if exc is None:
                try:
                    await AsyncSession(client, SessionInfo.from_dict(task.result())).close()
                except AgentjailError:
                    pass
            raise cancel
        if exc is not None:
            raise exc
        return AsyncSession(client, SessionInfo.from_dict(task.result()))

    async def __aenter__(self) -> "AsyncSession":
        self._session = await self
        return self._session

    async def __aexit__(self, typ: Optional[Type[BaseException]], exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        assert self._session is not None
        await self._session.__aexit__(typ, exc, tb)


class AsyncSession:
    """A session for asyncio callers; see `agentjail.Session`. `run()`,
    `info()` and `close()` return awaitables. As an async context manager
    it deletes the session when the block ends, also when the block raised
    or its task was cancelled."""

    def __init__(self, client: AsyncClient, info: SessionInfo) -> None:
        self._client = client
        self.id = info.id
        self.environment = info.environment
        self.start = info.start
        self.limits = info.limits
        self.idle_timeout_ms = info.idle_timeout_ms
        self.expires_at = info.expires_at
        self.extra = info.extra
        self.node = info.node or (info.id.rpartition(".")[2] if client.remote is not None else "")
        self.endpoint = info.endpoint
        self.state: Optional[SessionState] = None
        self.closed = False

    def __repr__(self) -> str:
        return f"<agentjail AsyncSession {self.id}{' closed' if self.closed else ''}>"

    def run(self, code: Optional[str] = None, *, stdin: Union[str, bytes, None] = None, files: Any = None,
            collect: Union[str, Iterable[str], None] = None,
            tests: Union[Tests, Mapping[str, Any], None] = None,
            limits: Union[Limits, Mapping[str, Any], None] = None,
            on_output: Optional[Callable[[Event], Any]] = None,
            command: Optional[Sequence[str]] = None) -> Coroutine[Any, Any, SessionResult]:
        """Run `code` in the session; see `Session.run`. Cancelling it
        closes its connection, as for `AsyncClient.run`; `on_output` is as
        for `AsyncClient.run`."""
        body = build_session_run(code, stdin=stdin, files=files, collect=collect, tests=tests, limits=limits,
                                 command=command)
        data = _http.request("POST", session_path(self.id, "/run"), body)

        async def run() -> SessionResult:
            if self.closed:
                raise closed_error(self.id)
            if on_output is not None:
                return await _with_callback(self._events(body), on_output)
            r = SessionResult.from_dict(await self._client._call("POST", data))
            if isinstance(r.session, SessionState):
                self.state = r.session
            return r
        return _Call(run, "AsyncSession.run()")

    def run_stream(self, code: Optional[str] = None, **kwargs: Any) -> AsyncGenerator[Event, None]:
        """`run` as an async iterator of Events, as `AsyncClient.run_stream`;
        the last one's `result` is the SessionResult."""
        return self._events(build_session_run(code, **kwargs))

    async def _events(self, body: Dict[str, Any]) -> AsyncGenerator[Event, None]:
        if self.closed:
            raise closed_error(self.id)
        events = self._client._stream(session_path(self.id, "/run"), body, SessionResult.from_dict)
        try:
            async for e in events:
                if e.kind == "result" and isinstance(e.result.session, SessionState):
                    self.state = e.result.session
                yield e
        finally:
            await events.aclose()

    def info(self) -> Coroutine[Any, Any, SessionInfo]:
        """GET /v1/sessions/{id}."""
        data = _http.request("GET", session_path(self.id))

        async def info() -> SessionInfo:
            if self.closed:
                raise closed_error(self.id)
            return SessionInfo.from_dict(await self._client._call("GET", data))
        return _Call(info, "AsyncSession.info()")

    def close(self) -> Coroutine[Any, Any, None]:
        """Delete the session; see `Session.close`. Once started, the DELETE
        is carried through even if the caller is cancelled meanwhile (the
        caller's CancelledError is raised after it)."""
        return _Call(self._close, "AsyncSession.close()")

    async def _close(self) -> None:
        if self.closed:
            return
        limit = self._client.timeout if self._client.timeout is not None else _CLEANUP_TIMEOUT
        data = _http.request("DELETE", session_path(self.id))
        task, cancel = await _complete(asyncio.wait_for(self._client._call("DELETE", data), limit), limit + 1)
        exc = _outcome(task)
        if exc is None or isinstance(exc, (NotFound, SessionEnded, SessionLost)):
            self.closed = True
        if cancel is not None:
            raise cancel
        if isinstance(exc, asyncio.TimeoutError) and not isinstance(exc, Timeout):
            raise Timeout(f"the agentjail daemon did not answer the DELETE of session {self.id} within {limit} s") \
                from None
        if exc is not None and not self.closed:
            raise exc

    def _close_blocking(self) -> None:
        """Delete the session with a short blocking call: for a coroutine
        being closed (its loop gone), which may not await."""
        if self.closed or self._client.remote is not None:
            return  # remote: the node ends it at its idle timeout
        try:
            Client(self._client.socket, timeout=5.0).attach_session(self.id).close()
            self.closed = True
        except (AgentjailError, OSError):
            pass

    async def __aenter__(self) -> "AsyncSession":
        return self

    async def __aexit__(self, typ: Optional[Type[BaseException]], exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        if typ is GeneratorExit:
            self._close_blocking()
            return
        try:
            await self._close()
        except AgentjailError:
            if typ is None:
                raise


async def _with_callback(events: AsyncGenerator[Event, None], on_output: Callable[[Event], Any]) -> Any:
    """The result of a stream of events, each output event given to
    on_output first (awaited when it returns an awaitable). The stream is
    closed when this returns or raises."""
    try:
        async for e in events:
            if e.kind == "result":
                return e.result
            r = on_output(e)
            if isinstance(r, collections.abc.Awaitable):
                await r
    finally:
        await events.aclose()
    raise ProtocolError("the daemon's streamed answer ended without its result")
