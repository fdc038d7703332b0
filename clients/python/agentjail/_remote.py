"""Remote access to daemons over TCP (docs/contract.md §7), without I/O
of its own: the nodes, how a run picks one, and how a request is dressed
for a remote listener. Client (sockets) and AsyncClient (asyncio streams)
share it.

- A client has one URL, a list, or `discover="dns:NAME:PORT"`: NAME's
  A/AAAA records, each a node, resolved again every REFRESH seconds and
  after a connection failure (at most once a second).
- A run goes to the better of two random nodes (power of two choices) by
  free slots: the node's last `Agentjail-Free-Slots`, less the runs this
  client has in flight there.
- A run refused before it started (429, 503, a refused connection, a
  failed TLS handshake) is tried on another node, at most TRIES nodes in
  all; a run that started is never tried again.
- A session stays on its node. When that node cannot be reached, its calls
  raise SessionLost: never a new, empty session somewhere else.
"""

from __future__ import annotations

import os
import random
import socket as _socket
import ssl
import threading
import time
import urllib.parse
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .errors import AgentjailError, DaemonUnavailable, QueueFull, SessionLost, ShuttingDown, Unauthorized

__all__ = ["Node", "Remote", "Refused", "remote_from"]

REFRESH = 30.0  # seconds between two resolutions of a discover name
RETRY = 1.0  # seconds before a failed resolution is tried again, doubling up to REFRESH
STALE = 1.0  # seconds after which a node's free slots are asked again
TRIES = 3  # nodes a run may be sent to before its last refusal is raised
# OpenSSL's verify codes of a certificate for another name, another IP address
_NAME_MISMATCH = (62, 64)

Resolver = Callable[[str, int], List[Tuple[int, str]]]


def resolve(name: str, port: int) -> List[Tuple[int, str]]:
    """(family, address) of each A/AAAA record of `name`, each once."""
    out: List[Tuple[int, str]] = []
    for family, _, _, _, sa in _socket.getaddrinfo(name, port, type=_socket.SOCK_STREAM):
        if family in (_socket.AF_INET, _socket.AF_INET6) and (family, sa[0]) not in out:
            out.append((family, sa[0]))
    return out


class Node:
    """One daemon: where to connect (`addr`, `port`), the name its TLS
    certificate is checked against (`host`), its node name once it has
    answered, and what the client knows of its load."""

    def __init__(self, host: str, port: int, addr: Optional[str] = None, family: int = 0) -> None:
        self.host = host
        self.port = port
        self.addr = addr or host
        self.family = family
        self.name = ""  # Agentjail-Node, once it answered
        self.free: Optional[int] = None  # Agentjail-Free-Slots of its last answer
        self.inflight = 0  # this client's requests there now
        self.down_until = 0.0  # a failed connection: not chosen before then
        self.seen = 0.0  # when `free` was learnt

    @property
    def address(self) -> str:
        return f"[{self.addr}]:{self.port}" if ":" in self.addr else f"{self.addr}:{self.port}"

    def score(self) -> float:
        free = self.free if self.free is not None else 1
        return free - self.inflight

    def __repr__(self) -> str:
        return f"<agentjail node {self.name or '?'} at {self.address}>"


class Refused(Exception):
    """A request that a node refused before anything ran: the connection
    or its TLS handshake failed. `error` is what to raise when no other
    node takes it."""

    def __init__(self, error: AgentjailError) -> None:
        super().__init__(str(error))
        self.error = error


def _split(url: str) -> Tuple[str, str, int]:
    u = urllib.parse.urlsplit(url)
    if u.scheme not in ("https", "http") or not u.hostname:
        raise ValueError(f"a daemon URL is https://HOST:PORT (or http:// for insecure_plaintext), not {url!r}")
    if u.path not in ("", "/") or u.query:
        raise ValueError(f"a daemon URL has no path: {url!r} (the client adds /v1/...)")
    return u.scheme, u.hostname, u.port or (443 if u.scheme == "https" else 80)


class Remote:
    """The nodes of a client and how to reach them."""

    def __init__(self, urls: Sequence[str], discover: Optional[str], token: str,
                 ca: Optional[str], resolver: Optional[Resolver] = None,
                 tls_server_name: Optional[str] = None) -> None:
        self.token = token
        # The name every node's certificate is checked against, instead of
        # the host dialled: pods are dialled by IP, and their one
        # certificate names the Service (agentjail.agentjail.svc).
        self.server_name = tls_server_name
        self.resolver = resolver or resolve
        self._lock = threading.Lock()
        self._nodes: List[Node] = []
        self._discover: Optional[Tuple[str, int]] = None
        self._resolved_at = 0.0
        self._next_try = 0.0  # after a failed lookup: none before then, forced or not
        self._backoff = RETRY
        schemes = set()
        for url in urls:
            scheme, host, port = _split(url)
            schemes.add(scheme)
            self._nodes.append(Node(host, port))
        if discover is not None:
            kind, _, rest = discover.partition(":")
            name, _, dport = rest.rpartition(":")
            if kind != "dns" or not name or not dport.isdigit():
                raise ValueError(f"discover is \"dns:NAME:PORT\", e.g. \"dns:agentjail.ns.svc.cluster.local:8443\", "
                                 f"not {discover!r}")
            self._discover = (name, int(dport))
            schemes.add("https")
        if not self._nodes and self._discover is None:
            raise ValueError("remote access needs url=, urls=[...] or discover=\"dns:NAME:PORT\"")
        if len(schemes) > 1:
            raise ValueError("the URLs mix https:// and http://; use one")
        self.tls = schemes != {"http"}
        if tls_server_name is not None and not self.tls:
            raise ValueError("tls_server_name= checks a TLS certificate: the URLs are http://")
        self.ssl: Optional[ssl.SSLContext] = None
        if self.tls:
            self.ssl = ssl.create_default_context(cafile=os.fspath(ca) if ca else None)
        if self._discover is not None:
            self.refresh(force=True)

    def nodes(self) -> List[Node]:
        self.refresh()
        with self._lock:
            return list(self._nodes)

    def refresh(self, force: bool = False) -> None:
        """Resolve the discover name again when it is time (or `force`d,
        at most once a second): new addresses are added, gone ones dropped;
        a node kept keeps what the client knows of it. A failed lookup
        keeps the last good list and is tried again after RETRY seconds,
        counted from its end and doubling up to REFRESH while it fails."""
        if self._discover is None:
            return
        now = time.monotonic()
        if now < self._next_try or now - self._resolved_at < (1.0 if force else REFRESH):
            return
        self._resolved_at = now
        name, port = self._discover
        try:
            found = self.resolver(name, port)
        except OSError as e:
            if not self._nodes:
                raise DaemonUnavailable(f"discover: cannot resolve {name}: {e}") from None
            # Not a whole REFRESH on the old list (a node that left must
            # not be chosen that long because one lookup timed out), nor a
            # lookup on every call while the resolver is down (each would
            # wait for its timeout).
            self._resolved_at = 0.0
            self._next_try = time.monotonic() + self._backoff
            self._backoff = min(REFRESH, self._backoff * 2)
            return
        self._next_try, self._backoff = 0.0, RETRY
        with self._lock:
            old = {(n.addr, n.port): n for n in self._nodes}
            self._nodes = [old.get((a, port)) or Node(name, port, a, fam) for fam, a in found]

    def pick(self, tried: List[Node], probe: Optional[Callable[[Node], None]] = None) -> Optional[Node]:
        """The better of two random nodes not yet tried (and not just
        failed, unless none is left). `probe` is called first on each of
        the two whose load is unknown or older than STALE seconds."""
        nodes = [n for n in self.nodes() if n not in tried]
        now = time.monotonic()
        up = [n for n in nodes if n.down_until <= now] or nodes
        if not up:
            return None
        two = random.sample(up, min(2, len(up)))
        if probe is not None and len(two) > 1:
            for n in two:
                if now - n.seen > STALE:
                    n.seen = now  # one probe at a time: the others use what is known
                    probe(n)
        return max(two, key=lambda n: n.score())

    def tls_name(self, node: Node) -> Optional[str]:
        """The name `node`'s certificate is checked against (None: no TLS)."""
        if self.ssl is None:
            return None
        return self.server_name or node.host

    def node_named(self, name: str) -> Optional[Node]:
        for n in self.nodes():
            if n.name == name:
                return n
        return None

    def node_at(self, endpoint: str) -> Node:
        """The node at `endpoint` (host:port): a known one, else a new one."""
        host, _, port = endpoint.rpartition(":")
        host = host.strip("[]")
        for n in self.nodes():
            if (n.addr == host or n.host == host) and str(n.port) == port:
                return n
        if not host or not port.isdigit():
            raise SessionLost(f"the session's endpoint {endpoint!r} is not host:port")
        return Node(host, int(port))

    def failed(self, node: Node) -> None:
        node.down_until = time.monotonic() + 5.0
        self.refresh(force=True)

    def answered(self, node: Node, headers: List[Tuple[str, str]]) -> None:
        for k, v in headers:
            if k == "agentjail-node":
                node.name = v
            elif k == "agentjail-free-slots":
                try:
                    node.free = int(v)
                    node.seen = time.monotonic()
                except ValueError:
                    pass
        node.down_until = 0.0

    def dress(self, data: bytes, node: Node) -> bytes:
        """A request made for the Unix socket, with the node's Host and the
        bearer token."""
        host = f"[{node.host}]" if ":" in node.host else node.host
        head = f"\r\nHost: {host}:{node.port}\r\nAuthorization: Bearer {self.token}\r\n".encode("latin-1")
        return data.replace(b"\r\nHost: agentjail\r\n", head, 1)

    def connect_error(self, node: Node, e: BaseException) -> Refused:
        if isinstance(e, ssl.SSLCertVerificationError) and e.verify_code in _NAME_MISMATCH:
            name = self.tls_name(node)
            why = (f"the TLS certificate of {node.address} does not name {name!r} ({e.verify_message}); "
                   + ("pass tls_server_name= (or set $AGENTJAIL_TLS_SERVER_NAME to) a name it carries, "
                      "e.g. the Service's, to check it against that" if self.server_name is None else
                      "tls_server_name= must be a name the certificate carries"))
        elif isinstance(e, ssl.SSLCertVerificationError):
            why = f"the TLS certificate of {node.host}:{node.port} did not verify ({e.verify_message}); pass ca= the CA that signed it"
        elif isinstance(e, ssl.SSLError):
            why = f"the TLS handshake with {node.address} failed: {e}"
        elif isinstance(e, ConnectionRefusedError):
            why = f"{node.address} refused the connection: no daemon listens there"
        elif isinstance(e, (TimeoutError, _socket.timeout)):
            why = f"no connection to {node.address} in time"
        else:
            why = f"cannot connect to the agentjail daemon at {node.address}: {e}"
        return Refused(DaemonUnavailable(why))


def retryable(e: AgentjailError) -> bool:
    """A refusal that says nothing ran: the run may go to another node."""
    return isinstance(e, (QueueFull, ShuttingDown))


def unauthorized(e: AgentjailError, node: Node) -> AgentjailError:
    if e.status == 401:
        return Unauthorized(f"{node.address} refused the bearer token (401 {e.code or 'unauthorized'}): check token=, "
                            "token_file= or $AGENTJAIL_TOKEN against the node's tokens_file", status=401, code=e.code)
    return e


def remote_from(url: Optional[str], urls: Optional[Sequence[str]], discover: Optional[str],
                token: Optional[str], token_file: Any, ca: Any, socket: Any,
                resolver: Optional[Resolver] = None, tls_server_name: Optional[str] = None) -> Optional[Remote]:
    """The Remote of a client's arguments and $AGENTJAIL_URL /
    $AGENTJAIL_TOKEN / $AGENTJAIL_TLS_SERVER_NAME, or None for the Unix
    socket."""
    given = [x for x in (url, urls, discover) if x is not None]
    if len(given) > 1:
        raise ValueError("pass one of url=, urls= and discover=")
    if not given:
        env = os.environ.get("AGENTJAIL_URL")
        if socket is not None or not env:
            if token is not None or token_file is not None or tls_server_name is not None:
                raise ValueError("token=, token_file= and tls_server_name= are for remote access: "
                                 "pass url=, urls= or discover= too")
            return None
        url = env
    if socket is not None:
        raise ValueError("pass either socket= (the local daemon) or url=/urls=/discover= (remote ones), not both")
    if token is None and token_file is not None:
        with open(token_file, encoding="utf-8") as f:
            token = f.read().strip()
        if not token:
            raise ValueError(f"token_file {os.fspath(token_file)} is empty")
    if token is None:
        token = os.environ.get("AGENTJAIL_TOKEN") or None
    if not token:
        raise ValueError("remote access needs a bearer token: pass token= or token_file=, or set $AGENTJAIL_TOKEN")
    if any(c in token for c in "\r\n\0 "):
        raise ValueError("the token has a space or a line break; it is one word of the node's tokens_file")
    if isinstance(urls, str):
        raise TypeError("urls= is a list of URLs; for one, pass url=")
    listed = [url] if url is not None else list(urls) if urls is not None else []
    if tls_server_name is None:
        tls_server_name = os.environ.get("AGENTJAIL_TLS_SERVER_NAME") or None
    if tls_server_name is not None and (not tls_server_name or any(c in tls_server_name for c in " /:\r\n\0")):
        raise ValueError(f"tls_server_name is a DNS name the certificate carries, e.g. \"agentjail.agentjail.svc\", "
                         f"not {tls_server_name!r}")
    return Remote(listed, discover, token, ca, resolver, tls_server_name)
