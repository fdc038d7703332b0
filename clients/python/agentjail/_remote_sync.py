"""The blocking client's requests to remote daemons (docs/contract.md §7):
TCP, TLS from the ssl module, one request per connection as on the Unix
socket. See _remote for the rules of placement and retries."""

from __future__ import annotations

import socket as _socket
import ssl
import time
from typing import Any, Callable, Dict, Generator, List, Optional, Tuple

from . import _http
from ._remote import TRIES, Node, Refused, Remote, retryable, unauthorized
from .errors import AgentjailError, DaemonUnavailable, SessionLost
from .stream import Event, EventParser

__all__ = ["RemoteMixin", "lost"]

_CONNECT_TIMEOUT = 10.0  # seconds a TCP connect and TLS handshake may take


def lost(session_id: str, node: Node, why: str) -> SessionLost:
    return SessionLost(f"session {session_id} lives on node {node.name or '?'} at {node.address}, which cannot be "
                       f"reached ({why}); sessions never move, so its state is gone: start a new session")


class RemoteMixin:
    """What Client adds for remote nodes; `self.remote` is a Remote."""

    remote: Optional[Remote]
    timeout: Optional[float]
    _exchange: Callable[..., _http.Response]
    _send: Callable[..., None]
    _recv: Callable[..., bytes]

    def _deadline(self) -> Optional[float]:
        return None if self.timeout is None else time.monotonic() + self.timeout

    def _open_node(self, node: Node, deadline: Optional[float]) -> _socket.socket:
        """A connection to `node`, TLS done; raises Refused."""
        assert self.remote is not None
        limit = _CONNECT_TIMEOUT if deadline is None else max(0.001, min(_CONNECT_TIMEOUT, deadline - time.monotonic()))
        try:
            sock = _socket.create_connection((node.addr, node.port), timeout=limit)
        except OSError as e:
            raise self.remote.connect_error(node, e) from None
        try:
            if self.remote.ssl is not None:
                sock = self.remote.ssl.wrap_socket(sock, server_hostname=self.remote.tls_name(node))
        except (ssl.SSLError, OSError) as e:
            sock.close()
            raise self.remote.connect_error(node, e) from None
        return sock

    def _on_node(self, node: Node, method: str, data: bytes, deadline: Optional[float]) -> _http.Response:
        assert self.remote is not None
        node.inflight += 1  # counted from the choice on: concurrent choices see it
        try:
            sock = self._open_node(node, deadline)
        except BaseException:
            node.inflight -= 1
            raise
        try:
            resp = self._exchange(sock, self.remote.dress(data, node), _http.ResponseParser(method), deadline)
        finally:
            node.inflight -= 1
            sock.close()
        self.remote.answered(node, resp.headers)
        return resp

    def _capacity(self, node: Node, deadline: Optional[float]) -> None:
        """Ask a node whose load is unknown or old for GET /v1/capacity."""
        try:
            obj = _http.result_of(self._on_node(node, "GET", _http.request("GET", "/v1/capacity"), deadline))
            node.free = max(0, int(obj.get("slots", 0)) - int(obj.get("running", 0)) - int(obj.get("queued", 0)))
            if obj.get("draining"):
                node.free = -1
            node.seen = time.monotonic()
        except (Refused, AgentjailError, ValueError, TypeError):
            pass  # the run itself will find out

    def _pick(self, tried: List[Node], deadline: Optional[float]) -> Optional[Node]:
        assert self.remote is not None
        return self.remote.pick(tried, lambda n: self._capacity(n, deadline))

    def _placed(self, method: str, data: bytes) -> Tuple[Dict[str, Any], str]:
        """A run or a new session: on the better of two nodes, on another
        one when refused before it started. Its JSON and the node's name."""
        assert self.remote is not None
        deadline = self._deadline()
        tried: List[Node] = []
        last: Optional[AgentjailError] = None
        for _ in range(TRIES):
            node = self._pick(tried, deadline)
            if node is None:
                break
            tried.append(node)
            try:
                resp = self._on_node(node, method, data, deadline)
            except Refused as r:
                self.remote.failed(node)
                last = r.error
                continue
            try:
                return _http.result_of(resp), node.name
            except AgentjailError as e:
                e = unauthorized(e, node)
                if not retryable(e):
                    raise e from None
                last = e
        raise last or DaemonUnavailable("no agentjail node to send the request to: the list of nodes is empty")

    def _on_session(self, session_id: str, node: Node, method: str, data: bytes) -> Dict[str, Any]:
        try:
            resp = self._on_node(node, method, data, self._deadline())
        except Refused as r:
            raise lost(session_id, node, str(r.error)) from None
        except DaemonUnavailable as e:
            raise lost(session_id, node, str(e)) from None
        try:
            return _http.result_of(resp)
        except AgentjailError as e:
            raise unauthorized(e, node) from None

    def _first(self, method: str, data: bytes) -> Dict[str, Any]:
        """A request any node answers (health): the first that does."""
        assert self.remote is not None
        deadline = self._deadline()
        last: Optional[AgentjailError] = None
        for node in self.remote.nodes():
            try:
                return _http.result_of(self._on_node(node, method, data, deadline))
            except Refused as r:
                last = r.error
        raise last or DaemonUnavailable("no agentjail node: the list of nodes is empty")

    def _each(self, method: str, data: bytes) -> List[Dict[str, Any]]:
        """A request to every node that answers (the list of sessions)."""
        assert self.remote is not None
        deadline = self._deadline()
        out = []
        for node in self.remote.nodes():
            try:
                resp = self._on_node(node, method, data, deadline)
            except Refused:
                continue
            try:
                out.append(_http.result_of(resp))
            except AgentjailError as e:
                raise unauthorized(e, node) from None
        return out

    def _node_of(self, session_id: str, endpoint: str = "") -> Node:
        """The node of a session: the known node named by the end of its
        id (the one that made it, for this client's own sessions), else its
        endpoint, else the node of that name after asking each its name."""
        assert self.remote is not None
        name = session_id.rpartition(".")[2]
        node = self.remote.node_named(name)
        if node is not None:
            return node
        if endpoint:
            return self.remote.node_at(endpoint)
        if node is None:
            deadline = self._deadline()
            for n in self.remote.nodes():
                if not n.name:
                    self._capacity(n, deadline)
            node = self.remote.node_named(name)
        if node is None:
            raise SessionLost(f"no node named {name!r} (from session id {session_id}) answers: "
                              f"the session is gone with its node")
        return node

    def _remote_stream(self, path: str, body: Dict[str, Any], make: Callable[[Any], Any],
                       node: Optional[Node] = None, session_id: str = "") -> Generator[Event, None, None]:
        """A streamed run on a placed node (tried again elsewhere while no
        event has come and the refusal says nothing ran), or a session's
        streamed call on its node."""
        assert self.remote is not None
        body["stream"] = True
        data = _http.request("POST", path, body)
        deadline = self._deadline()
        tried: List[Node] = []
        for attempt in range(1 if node is not None else TRIES):
            target = node or self._pick(tried, deadline)
            if target is None:
                raise DaemonUnavailable("no agentjail node to send the request to: the list of nodes is empty")
            tried.append(target)
            target.inflight += 1
            try:
                sock = self._open_node(target, deadline)
            except BaseException as r:
                target.inflight -= 1
                if not isinstance(r, Refused):
                    raise
                if node is not None:
                    raise lost(session_id, node, str(r.error)) from None
                self.remote.failed(target)
                if attempt == TRIES - 1:
                    raise r.error from None
                continue
            parser = EventParser(make)
            yielded = False
            try:
                self._send(sock, self.remote.dress(data, target), deadline)
                while not parser.finished:
                    chunk = self._recv(sock, deadline)
                    try:
                        events = parser.feed(chunk) if chunk else parser.eof()
                    except AgentjailError as e:
                        e = unauthorized(e, target)
                        if yielded or node is not None or not retryable(e) or attempt == TRIES - 1:
                            raise e from None
                        break  # refused before it started: the next node
                    head = parser._http.head
                    if head is not None:
                        self.remote.answered(target, head[2])
                    for e in events:
                        if e.kind == "result":
                            e.result.node = target.name
                        yielded = True
                        yield e
                else:
                    return
            finally:
                target.inflight -= 1
                sock.close()
