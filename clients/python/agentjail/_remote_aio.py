"""The asyncio client's requests to remote daemons (docs/contract.md §7),
on asyncio streams with the ssl module's TLS. The same rules as the
blocking client (_remote_sync): runs and new sessions are placed and tried
again elsewhere only when refused before they started; a session's calls
go to its node, SessionLost when it cannot be reached.

A connection is closed with transport.abort(), which needs no await: a
cancelled or abandoned call leaves no socket behind (the daemon then
cancels the run, as on the Unix socket)."""

from __future__ import annotations

import asyncio
import ssl
import time
import urllib.parse
from typing import Any, AsyncGenerator, Dict, List, Optional, Tuple

from . import _http
from ._remote import TRIES, Node, Refused, Remote, retryable, unauthorized
from ._remote_sync import _CONNECT_TIMEOUT, lost
from .errors import AgentjailError, DaemonUnavailable, SessionLost, Timeout
from .stream import Event, EventParser

__all__ = ["route", "stream"]


async def _open(remote: Remote, node: Node) -> Tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    try:
        return await asyncio.wait_for(asyncio.open_connection(
            node.addr, node.port, ssl=remote.ssl, server_hostname=remote.tls_name(node)),
            _CONNECT_TIMEOUT)
    except (OSError, ssl.SSLError, asyncio.TimeoutError) as e:
        raise remote.connect_error(node, e) from None


async def exchange(remote: Remote, node: Node, method: str, data: bytes) -> _http.Response:
    node.inflight += 1  # counted from the choice on: concurrent choices see it
    try:
        reader, writer = await _open(remote, node)
    except BaseException:
        node.inflight -= 1
        raise
    try:
        writer.write(remote.dress(data, node))
        parser = _http.ResponseParser(method)
        while True:
            try:
                chunk = await reader.read(65536)
            except OSError as e:
                raise DaemonUnavailable(f"lost the connection to the agentjail daemon at {node.address}: {e}") from None
            resp = parser.feed(chunk) if chunk else parser.eof()
            if resp is not None:
                break
    finally:
        node.inflight -= 1
        writer.transport.abort()
    remote.answered(node, resp.headers)
    return resp


async def _capacity(remote: Remote, node: Node) -> None:
    try:
        obj = _http.result_of(await exchange(remote, node, "GET", _http.request("GET", "/v1/capacity")))
        node.free = -1 if obj.get("draining") else max(
            0, int(obj.get("slots", 0)) - int(obj.get("running", 0)) - int(obj.get("queued", 0)))
        node.seen = time.monotonic()
    except (Refused, AgentjailError, ValueError, TypeError):
        pass


async def _pick(remote: Remote, tried: List[Node]) -> Optional[Node]:
    stale: List[Node] = []
    node = remote.pick(tried, stale.append)
    if stale:  # learn their load, then choose again among the same
        for n in stale:
            await _capacity(remote, n)
        node = remote.pick(tried)
    return node


async def placed(remote: Remote, method: str, data: bytes) -> Dict[str, Any]:
    tried: List[Node] = []
    last: Optional[AgentjailError] = None
    for _ in range(TRIES):
        node = await _pick(remote, tried)
        if node is None:
            break
        tried.append(node)
        try:
            resp = await exchange(remote, node, method, data)
        except Refused as r:
            remote.failed(node)
            last = r.error
            continue
        try:
            obj = _http.result_of(resp)
        except AgentjailError as e:
            e = unauthorized(e, node)
            if not retryable(e):
                raise e from None
            last = e
            continue
        obj.setdefault("node", node.name)
        return obj
    raise last or DaemonUnavailable("no agentjail node to send the request to: the list of nodes is empty")


async def node_of(remote: Remote, session_id: str) -> Node:
    name = session_id.rpartition(".")[2]
    node = remote.node_named(name)
    if node is None:
        for n in remote.nodes():
            if not n.name:
                await _capacity(remote, n)
        node = remote.node_named(name)
    if node is None:
        raise SessionLost(f"no node named {name!r} (from session id {session_id}) answers: the session is gone "
                          "with its node")
    return node


async def on_session(remote: Remote, session_id: str, method: str, data: bytes) -> Dict[str, Any]:
    node = await node_of(remote, session_id)
    try:
        resp = await exchange(remote, node, method, data)
    except Refused as r:
        raise lost(session_id, node, str(r.error)) from None
    except DaemonUnavailable as e:
        raise lost(session_id, node, str(e)) from None
    try:
        obj = _http.result_of(resp)
    except AgentjailError as e:
        raise unauthorized(e, node) from None
    if method == "POST":
        obj.setdefault("node", node.name)
    return obj


async def route(remote: Remote, method: str, data: bytes) -> Any:
    """Send a request made for the Unix socket to the node it belongs to,
    by its request line: a run or a new session is placed, a session's
    call goes to the session's node, the list of sessions to every node,
    anything else to the first node that answers."""
    line = data[: data.find(b"\r\n")].decode("latin-1")
    path = line.split(" ")[1]
    if method == "POST" and path in ("/v1/run", "/v1/sessions"):
        return await placed(remote, method, data)
    if path.startswith("/v1/sessions/"):
        sid = urllib.parse.unquote(path[len("/v1/sessions/"):].split("/")[0])
        return await on_session(remote, sid, method, data)
    if path == "/v1/sessions":
        out: List[Any] = []
        for node in remote.nodes():
            try:
                obj = _http.result_of(await exchange(remote, node, method, data))
            except Refused:
                continue
            out.extend(obj.get("sessions") or [])
        return {"sessions": out}
    last: Optional[AgentjailError] = None
    for node in remote.nodes():
        try:
            return _http.result_of(await exchange(remote, node, method, data))
        except Refused as r:
            last = r.error
    raise last or DaemonUnavailable("no agentjail node: the list of nodes is empty")


async def stream(remote: Remote, path: str, data: bytes, make: Any, session_id: str = "",
                 deadline: Optional[float] = None) -> AsyncGenerator[Event, None]:
    """A streamed run (placed; tried on another node while no event has
    come and the refusal says nothing ran) or a session's streamed call
    (on its node); yields its Events. `deadline` is the loop's time by
    which the whole answer must have come."""
    loop = asyncio.get_running_loop()
    tried: List[Node] = []
    for attempt in range(1 if session_id else TRIES):
        node = await node_of(remote, session_id) if session_id else await _pick(remote, tried)
        if node is None:
            raise DaemonUnavailable("no agentjail node to send the request to: the list of nodes is empty")
        tried.append(node)
        node.inflight += 1
        try:
            reader, writer = await _open(remote, node)
        except Refused as r:
            node.inflight -= 1
            if session_id:
                raise lost(session_id, node, str(r.error)) from None
            remote.failed(node)
            if attempt == TRIES - 1:
                raise r.error from None
            continue
        except BaseException:
            node.inflight -= 1
            raise
        parser = EventParser(make)
        yielded = False
        try:
            writer.write(remote.dress(data, node))
            while not parser.finished:
                try:
                    left = None if deadline is None else max(0.0, deadline - loop.time())
                    chunk = await asyncio.wait_for(reader.read(65536), left)
                except asyncio.TimeoutError:
                    raise Timeout("the agentjail node did not answer in time; the connection is closed, "
                                  "so the run is cancelled") from None
                except OSError as e:
                    raise DaemonUnavailable(f"lost the connection to the agentjail daemon at {node.address}: {e}") \
                        from None
                try:
                    events = parser.feed(chunk) if chunk else parser.eof()
                except AgentjailError as e:
                    e = unauthorized(e, node)
                    if yielded or session_id or not retryable(e) or attempt == TRIES - 1:
                        raise e from None
                    break  # refused before it started: the next node
                head = parser._http.head
                if head is not None:
                    remote.answered(node, head[2])
                for ev in events:
                    if ev.kind == "result":
                        ev.result.node = node.name
                    yielded = True
                    yield ev
            else:
                return
        finally:
            node.inflight -= 1
            writer.transport.abort()
