"""Streamed answers: a run or a session's call whose output comes as the
program writes it (docs/contract.md, "Streamed output").

The daemon answers a request with "stream": true by newline-delimited JSON
events: {"event": "stdout", "data": ...}, {"event": "stderr", ...}, then
exactly one {"event": "result", ...the result...}. An error before
anything was streamed is an ordinary HTTP error; one after is a last
{"event": "error", "http_status": N, "error": {...}} event. Both raise the
same AgentjailError here.

`EventParser` turns the bytes received into `Event`s without I/O, for the
sync client (`Client.run_stream`) and the asyncio one
(`AsyncClient.run_stream`) alike.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any, Callable, List, Optional

from . import _http
from .errors import DaemonUnavailable, ProtocolError

__all__ = ["Event", "EventParser", "NDJSON"]

NDJSON = "application/x-ndjson"


@dataclass(frozen=True)
class Event:
    """One event of a streamed answer.

    `kind` is "stdout" or "stderr" for output, with its text in `data`
    (U+FFFD where the bytes are not UTF-8) and its exact bytes in `raw`;
    or "result", the last, with the Result (SessionResult for a session's
    call) in `result`. The output events' texts, joined, are the result's
    stdout and stderr."""

    kind: str
    data: str = ""
    raw: bytes = b""
    result: Any = None


class EventParser:
    """Feed it the bytes as they arrive; `feed` returns the events they
    complete. `finished` turns true with the result event. An error answer
    or an error event raises its AgentjailError. `make` builds the result
    from its JSON object."""

    def __init__(self, make: Callable[[Any], Any]) -> None:
        self._http = _http.ResponseParser("POST")
        self._make = make
        self._lines = bytearray()
        self.finished = False

    def feed(self, data: bytes) -> List[Event]:
        return self._events(self._http.feed(data))

    def eof(self) -> List[Event]:
        if self._http.head is not None and self._streamed() and not self.finished:
            raise DaemonUnavailable("the daemon closed the connection before the result of the streamed answer")
        return self._events(self._http.eof())

    def _streamed(self) -> bool:
        head = self._http.head
        assert head is not None
        ctype = next((v for k, v in head[2] if k == "content-type"), "")
        return head[0] == 200 and ctype.split(";")[0].strip().lower() == NDJSON

    def _events(self, resp: Optional[_http.Response]) -> List[Event]:
        if self.finished or self._http.head is None:
            return []
        if not self._streamed():
            if resp is None:
                return []
            # An error, or a daemon that answered with the result alone.
            obj = _http.result_of(resp)
            self.finished = True
            return [Event("result", result=self._make(obj))]
        self._lines += self._http.take_body()
        events: List[Event] = []
        while not self.finished:
            nl = self._lines.find(b"\n")
            if nl < 0:
                break
            line = bytes(self._lines[:nl])
            del self._lines[: nl + 1]
            e = self._event(line)
            if e is not None:
                events.append(e)
        if resp is not None and not self.finished:
            raise ProtocolError("the daemon's streamed answer ended without its result")
        return events

    def _event(self, line: bytes) -> Optional[Event]:
        try:
            obj = json.loads(line)
        except (ValueError, UnicodeDecodeError) as e:
            raise ProtocolError(f"a line of the daemon's streamed answer is not JSON: {e}") from None
        if not isinstance(obj, dict):
            raise ProtocolError("a line of the daemon's streamed answer is not a JSON object")
        kind = obj.get("event")
        if kind in ("stdout", "stderr"):
            data = obj.get("data")
            if not isinstance(data, str):
                raise ProtocolError(f"a {kind} event without its data")
            raw = data.encode("utf-8")
            b64 = obj.get("data_base64")
            if isinstance(b64, str):  # not UTF-8: the exact bytes
                try:
                    raw = base64.b64decode(b64, validate=True)
                except (binascii.Error, ValueError):
                    raise ProtocolError(f"a {kind} event with bad data_base64") from None
            return Event(kind, data, raw)
        if kind == "result":
            del obj["event"]
            self.finished = True
            return Event("result", result=self._make(obj))
        if kind == "error":
            status = obj.get("http_status")
            if not isinstance(status, int):
                status = 500
            self.finished = True
            raise _http.error_of(_http.Response(status, "", [], line))
        return None  # a kind of event this client does not know: skipped
