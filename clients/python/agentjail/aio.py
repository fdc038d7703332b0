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
from typing import Any, Callable, Coroutine, Dict, Generator, Iterable, Mapping, Optional, Union

from . import _http
from .client import check_server, connect_error, socket_path
from .errors import DaemonUnavailable, Timeout
from .types import Limits, Result, Tests, build_request

__all__ = ["AsyncClient"]



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

    def __init__(self, socket: Union[str, "os.PathLike[str]", None] = None, timeout: Optional[float] = None) -> None:
        self.socket = socket_path(socket)
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"AsyncClient(socket={self.socket!r}, timeout={self.timeout!r})"

    def run(self, code: str, *, stdin: Union[str, bytes, None] = None, files: Any = None,
            collect: Union[str, Iterable[str], None] = None,
            limits: Union[Limits, Mapping[str, Any], None] = None,
            tests: Union[Tests, Mapping[str, Any], None] = None,
            env: Optional[Mapping[str, str]] = None,
            on_forbidden_syscall: Optional[str] = None,
            environment: Optional[str] = None,
            start: Optional[str] = None) -> Coroutine[Any, Any, Result]:
        """Run one program; await it for its Result. Argument mistakes raise
        here, at the call; daemon refusals raise when awaited."""
        data = _http.request("POST", "/v1/run", build_request(
            code, stdin=stdin, files=files, collect=collect, limits=limits, tests=tests, env=env,
            on_forbidden_syscall=on_forbidden_syscall, environment=environment, start=start))

        async def run() -> Result:
            return Result.from_dict(await self._call("POST", data))
        return _Call(run, "AsyncClient.run()")

    def health(self) -> Coroutine[Any, Any, Dict[str, Any]]:
        """GET /v1/health."""
        data = _http.request("GET", "/v1/health")
        return _Call(lambda: self._call("GET", data), "AsyncClient.health()")

    async def _call(self, method: str, data: bytes) -> Dict[str, Any]:
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
