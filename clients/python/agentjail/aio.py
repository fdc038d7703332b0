"""The asyncio client: the same calls as `Client`, as awaitables, on
asyncio's own Unix-socket streams (no threads, no executor).

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
"""

from __future__ import annotations

import asyncio
import collections.abc
import os
from typing import Any, Awaitable, Callable, Dict, Generator, Iterable, Mapping, Optional, TypeVar, Union

from . import _http
from .client import connect_error, socket_path
from .errors import DaemonUnavailable, Timeout
from .types import Limits, Result, Tests, build_request

__all__ = ["AsyncClient"]

T = TypeVar("T")


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
            on_forbidden_syscall: Optional[str] = None) -> Awaitable[Result]:
        """Run one program; await it for its Result. Argument mistakes raise
        here, at the call; daemon refusals raise when awaited."""
        body = build_request(code, stdin=stdin, files=files, collect=collect, limits=limits,
                             tests=tests, env=env, on_forbidden_syscall=on_forbidden_syscall)

        async def run() -> Result:
            return Result.from_dict(await self._call("POST", "/v1/run", body))
        return _Call(run, "AsyncClient.run()")

    def health(self) -> Awaitable[Dict[str, Any]]:
        """GET /v1/health."""
        return _Call(lambda: self._call("GET", "/v1/health", None), "AsyncClient.health()")

    async def _call(self, method: str, path: str, body: Optional[Dict[str, Any]]) -> Dict[str, Any]:
        data = _http.request(method, path, body)
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
        try:
            reader, writer = await asyncio.open_unix_connection(self.socket)
        except OSError as e:
            raise connect_error(self.socket, e) from None
        abandoned = False
        try:
            writer.write(data)
            try:
                await writer.drain()
            except (BrokenPipeError, ConnectionResetError):
                pass  # an early answer (413) may still be readable, as in Client
            parser = _http.ResponseParser(method)
            while True:
                try:
                    chunk = await reader.read(65536)
                except ConnectionResetError:
                    raise DaemonUnavailable("the agentjail daemon reset the connection before it answered") from None
                except OSError as e:
                    raise DaemonUnavailable(f"lost the connection to the agentjail daemon: {e}") from None
                if not chunk:
                    return parser.eof()
                resp = parser.feed(chunk)
                if resp is not None:
                    return resp
        except GeneratorExit:
            # Collected while suspended (an abandoned task): no awaiting now.
            abandoned = True
            _close_now(writer)
            raise
        finally:
            if not abandoned:
                writer.close()
                try:
                    await writer.wait_closed()
                except Exception:
                    pass  # the daemon may have reset it; it is closed either way


def _close_now(writer: asyncio.StreamWriter) -> None:
    """Close a connection without the event loop's help when the loop is
    already closed (transport.close() would need it to run once more)."""
    transport = writer.transport
    try:
        transport.abort()
        return
    except RuntimeError:  # the loop is closed
        pass
    sock = getattr(transport, "_sock", None)
    if sock is not None:
        sock.close()
        transport._sock = None  # type: ignore[attr-defined]  # so its __del__ does not warn
