"""HTTP/1.1 over the daemon's Unix socket, without I/O.

Both clients share this: `request()` makes the bytes to send and
`ResponseParser` turns the bytes received into a `Response`, so the sync
client (plain sockets) and the asyncio client (streams) behave the same way
byte for byte, and one set of tests covers both.

One request per connection, `Connection: close`: a run is a long request,
and closing its connection is how a caller cancels it (the daemon kills the
jail when its client goes away). The client never half-closes its side
(shutdown(SHUT_WR)): the daemon would read that EOF as the caller leaving.
"""

from __future__ import annotations

import email.utils
import json
import time
from typing import Any, Dict, List, Optional, Tuple

from .errors import AgentjailError, DaemonUnavailable, ProtocolError, Timeout, from_response

USER_AGENT = "agentjail-python/0.1"

# Bounds on what a response's head may be: a daemon that sends more is broken.
_MAX_HEAD = 64 * 1024


def request(method: str, path: str, body: Optional[Any] = None) -> bytes:
    """The bytes of one request; `body` is converted to JSON."""
    head = [f"{method} {path} HTTP/1.1", "Host: agentjail", f"User-Agent: {USER_AGENT}",
            "Accept: application/json", "Connection: close"]
    data = b""
    if body is not None:
        try:
            text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as e:
            # e.g. a set among a test's args, or NaN: the daemon takes JSON only
            raise type(e)(f"the request has a value with no JSON form: {e}") from None
        data = text.encode("utf-8")
        head.append("Content-Type: application/json")
        head.append(f"Content-Length: {len(data)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode("ascii") + data


class Response:
    __slots__ = ("status", "reason", "headers", "body")

    def __init__(self, status: int, reason: str, headers: List[Tuple[str, str]], body: bytes) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body

    def header(self, name: str) -> Optional[str]:
        name = name.lower()
        for k, v in self.headers:
            if k == name:
                return v
        return None

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except (ValueError, UnicodeDecodeError) as e:
            raise ProtocolError(f"the daemon answered HTTP {self.status} with a body that is not JSON: {e}",
                                status=self.status) from None


class ResponseParser:
    """Feed it the bytes as they arrive; `feed` returns the Response once it
    is complete. `eof()` says the peer closed: it returns the Response when
    the body ran to the end of the connection, else raises DaemonUnavailable.
    """

    def __init__(self, method: str = "GET") -> None:
        self._buf = bytearray()
        self._method = method
        self._head: Optional[Tuple[int, str, List[Tuple[str, str]]]] = None
        self._length: Optional[int] = None  # Content-Length, or None
        self._chunked = False
        self._body = bytearray()
        self.done: Optional[Response] = None

    def feed(self, data: bytes) -> Optional[Response]:
        if self.done is not None:
            return self.done
        self._buf += data
        while self._head is None:
            end = self._buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buf) > _MAX_HEAD:
                    raise ProtocolError("the daemon's response head is too large")
                return None
            head = bytes(self._buf[:end])
            del self._buf[: end + 4]
            status, reason, headers = _parse_head(head)
            if 100 <= status < 200:
                continue  # an interim response (100 Continue): the real one follows
            self._head = (status, reason, headers)
            te = ",".join(v for k, v in headers if k == "transfer-encoding").lower()
            self._chunked = "chunked" in te
            cl = [v for k, v in headers if k == "content-length"]
            if not self._chunked and cl:
                try:
                    self._length = int(cl[0])
                except ValueError:
                    raise ProtocolError(f"bad Content-Length {cl[0]!r}") from None
            if self._method == "HEAD" or status in (204, 304):
                self._length = 0
                self._chunked = False
        if self._chunked:
            self._parse_chunks()
        elif self._length is not None:
            if len(self._buf) >= self._length:
                self._body = self._buf[: self._length]
                self._finish()
        return self.done

    @property
    def head(self) -> Optional[Tuple[int, str, List[Tuple[str, str]]]]:
        """The status, reason and headers, once they have come."""
        return self._head

    def take_body(self) -> bytes:
        """The body's bytes that came since the last take (a streamed
        answer is read as it comes); the Response keeps only what was
        not taken."""
        b = bytes(self._body)
        self._body.clear()
        return b

    def eof(self) -> Response:
        if self.done is not None:
            return self.done
        if self._head is None:
            if self._buf:
                raise DaemonUnavailable("the daemon closed the connection in the middle of its response")
            raise DaemonUnavailable("the daemon closed the connection without answering")
        if self._chunked or self._length is not None:
            raise DaemonUnavailable("the daemon closed the connection in the middle of its response")
        self._body = self._buf  # no length: the body runs to the end of the connection
        self._finish()
        assert self.done is not None
        return self.done

    def _finish(self) -> None:
        assert self._head is not None
        status, reason, headers = self._head
        self.done = Response(status, reason, headers, bytes(self._body))

    def _parse_chunks(self) -> None:
        while True:
            nl = self._buf.find(b"\r\n")
            if nl < 0:
                return
            line = bytes(self._buf[:nl]).split(b";", 1)[0].strip()
            try:
                size = int(line, 16)
            except ValueError:
                raise ProtocolError(f"bad chunk size {line!r}") from None
            if size == 0:
                # the last chunk, optional trailers, then an empty line:
                # "0\r\n\r\n" or "0\r\nName: v\r\n\r\n"
                end = self._buf.find(b"\r\n\r\n", nl)
                if end < 0:
                    return
                del self._buf[: end + 4]
                self._finish()
                return
            if len(self._buf) < nl + 2 + size + 2:
                return
            start = nl + 2
            self._body += self._buf[start: start + size]
            if self._buf[start + size: start + size + 2] != b"\r\n":
                raise ProtocolError("a chunk does not end with CRLF")
            del self._buf[: start + size + 2]


def _parse_head(head: bytes) -> Tuple[int, str, List[Tuple[str, str]]]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise ProtocolError(f"not an HTTP/1.x response: {lines[0][:80]!r}")
    headers = []
    for line in lines[1:]:
        k, sep, v = line.partition(":")
        if not sep:
            raise ProtocolError(f"bad header line {line[:80]!r}")
        headers.append((k.strip().lower(), v.strip()))
    return int(parts[1]), parts[2] if len(parts) > 2 else "", headers


def retry_after(value: Optional[str]) -> Optional[float]:
    """Retry-After in seconds: either delta-seconds or an HTTP date."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(int(value)))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def result_of(resp: Response) -> Dict[str, Any]:
    """The JSON object of a 2xx answer ({} for a 204, which has no body), or
    the exception for an error answer."""
    if resp.status == 204:
        return {}
    if 200 <= resp.status < 300:
        obj = resp.json()
        if not isinstance(obj, dict):
            raise ProtocolError(f"the daemon answered a JSON {type(obj).__name__}, not an object",
                                status=resp.status)
        return obj
    raise error_of(resp)


def error_of(resp: Response) -> AgentjailError:
    code: Optional[str] = None
    message = ""
    err: Any = None
    try:
        obj = json.loads(resp.body)
        err = obj.get("error") if isinstance(obj, dict) else None
        if isinstance(err, dict):
            code = err.get("code") if isinstance(err.get("code"), str) else None
            message = err.get("message") if isinstance(err.get("message"), str) else ""
    except (ValueError, UnicodeDecodeError):
        pass
    if not message:
        text = resp.body.decode("utf-8", "replace").strip()
        message = text[:500] or f"HTTP {resp.status} {resp.reason}".strip()
    return from_response(resp.status, code, message, retry_after(resp.header("retry-after")),
                         err if isinstance(err, dict) else None)


def timed_out(timeout: Optional[float], who: str = "the agentjail daemon") -> Timeout:
    """The error of an answer that did not come within the client's
    timeout (Client and AsyncClient alike)."""
    return Timeout(f"{who} did not answer within {timeout} s; "
                   "the connection is closed, so the run is cancelled")


def lost(e: OSError) -> DaemonUnavailable:
    """The error of a connection to the daemon that broke before its
    answer was read whole (Client and AsyncClient alike)."""
    if isinstance(e, ConnectionResetError):
        return DaemonUnavailable("the agentjail daemon reset the connection before it answered")
    return DaemonUnavailable(f"lost the connection to the agentjail daemon: {e}")
