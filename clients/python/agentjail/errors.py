"""Exceptions of the agentjail client.

A program that fails, crashes or is killed is not an exception: it is a
`Result` whose `status` says so. These exceptions are for runs that never
happened: the daemon refused the request, could not set the jail up, or could
not be reached.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Tuple, Type

__all__ = [
    "AgentjailError",
    "InvalidRequest",
    "Forbidden",
    "TooLarge",
    "QueueFull",
    "ShuttingDown",
    "SetupFailed",
    "NotFound",
    "SessionBusy",
    "SessionEnded",
    "TooManySessions",
    "DaemonUnavailable",
    "ProtocolError",
    "SessionLost",
    "Unauthorized",
    "Timeout",
]


class AgentjailError(Exception):
    """Base of every error of this package.

    `status` is the HTTP status (None when no response came), `code` the
    daemon's error code (e.g. "queue_full"), `message` its message.
    """

    #: The error code this class stands for (docs/contract.md §2).
    default_code = ""

    def __init__(self, message: str, *, status: Optional[int] = None, code: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code if code is not None else self.default_code

    def __str__(self) -> str:
        return self.message


class InvalidRequest(AgentjailError):
    """400: the request is malformed or a limit is out of range.

    The daemon's message names the field ("limits.memory_bytes: must be at
    least 16 MiB"); `field` holds that name, or None when the message names none.
    """

    default_code = "invalid_request"

    @property
    def field(self) -> Optional[str]:
        head, sep, _ = self.message.partition(":")
        if not sep or not head or " " in head.strip():
            return None
        return head.strip()


class Forbidden(AgentjailError):
    """403: the daemon does not accept this caller (its uid/gid), or the
    socket's file permissions refused the connection (status None then)."""

    default_code = "forbidden"


class TooLarge(AgentjailError):
    """413: the request body is larger than the daemon accepts."""

    default_code = "too_large"


class QueueFull(AgentjailError):
    """429: every slot is busy and the queue is full.

    `retry_after` is the daemon's Retry-After in seconds (None if it sent none).
    """

    default_code = "queue_full"

    def __init__(self, message: str, *, status: Optional[int] = None, code: Optional[str] = None,
                 retry_after: Optional[float] = None) -> None:
        super().__init__(message, status=status, code=code)
        self.retry_after = retry_after


class ShuttingDown(AgentjailError):
    """503: the daemon drains or is stopping and takes no new runs or
    sessions (code "draining", or "shutting_down" from older daemons).
    Nothing ran: the request may be sent to another node."""

    default_code = "shutting_down"


class SetupFailed(AgentjailError):
    """500: the jail could not be set up; the message names the stage."""

    default_code = "setup_failed"


class NotFound(AgentjailError):
    """404: no such session for this caller: an id that never existed, one
    the daemon no longer remembers, or another user's (the daemon does not
    tell these apart)."""

    default_code = "not_found"


class SessionBusy(AgentjailError):
    """409: a call of this session is still running; a session takes one
    call at a time."""

    default_code = "session_busy"


class SessionEnded(AgentjailError):
    """410: the session has ended. `reason` is why, as the daemon reports
    it in `ended_reason` ("exited", "memory_limit", "idle_timeout",
    "deleted", ...), or None when it sent none."""

    default_code = "session_ended"

    def __init__(self, message: str, *, status: Optional[int] = None, code: Optional[str] = None,
                 reason: Optional[str] = None) -> None:
        super().__init__(message, status=status, code=code)
        self.reason = reason


class TooManySessions(AgentjailError):
    """429: the daemon already holds as many sessions as it is configured
    for (`admission.max_sessions`). `retry_after` is its Retry-After in
    seconds (None if it sent none). Not a QueueFull: waiting helps only
    once some session ends."""

    default_code = "too_many_sessions"

    def __init__(self, message: str, *, status: Optional[int] = None, code: Optional[str] = None,
                 retry_after: Optional[float] = None) -> None:
        super().__init__(message, status=status, code=code)
        self.retry_after = retry_after


class DaemonUnavailable(AgentjailError):
    """The daemon could not be reached, or went away before it answered:
    no socket at the path, connection refused (a stale socket), or the
    connection closed mid-request or mid-response."""

    default_code = "unavailable"


class Unauthorized(Forbidden):
    """401 (remote access): the node does not know the bearer token, or
    none was sent. Check token=, token_file= or $AGENTJAIL_TOKEN."""

    default_code = "unauthorized"


class SessionLost(AgentjailError):
    """The node that holds a session cannot be reached (it stopped, died
    or left the list of nodes), the session is not where the client
    looked (421 session_elsewhere), or the daemon that started it has
    stopped and another runs in its place (410 session_lost: it was killed
    or restarted). Sessions never move and do not outlive their daemon:
    its variables and files are gone; start a new session."""

    default_code = "session_lost"


class ProtocolError(AgentjailError):
    """The daemon answered something that is not the contract's HTTP/JSON
    (a malformed status line, a body that is not JSON)."""

    default_code = "protocol_error"


class Timeout(AgentjailError, TimeoutError):
    """The client's own `timeout` passed before the daemon answered. The
    connection is closed, which makes the daemon kill the jail."""

    default_code = "timeout"


_BY_CODE_CLASSES: Tuple[Type[AgentjailError], ...] = (
    InvalidRequest, Forbidden, TooLarge, QueueFull, ShuttingDown, SetupFailed, NotFound, SessionBusy, SessionEnded,
    TooManySessions, SessionLost)
_BY_CODE = {cls.default_code: cls for cls in _BY_CODE_CLASSES}
_BY_CODE["draining"] = ShuttingDown
_BY_CODE["unauthorized"] = Unauthorized
_BY_CODE["session_elsewhere"] = SessionLost
_BY_STATUS = {400: InvalidRequest, 403: Forbidden, 404: NotFound, 409: SessionBusy, 410: SessionEnded,
              413: TooLarge, 429: QueueFull, 503: ShuttingDown, 500: SetupFailed}


def from_response(status: int, code: Optional[str], message: str,
                  retry_after: Optional[float], error: Optional[Mapping[str, Any]] = None) -> AgentjailError:
    """The exception for an HTTP error answer: by the daemon's error code,
    then by the HTTP status, else the base class. `error` is the answer's
    whole error object, for the fields some codes add (`ended_reason`)."""
    cls = _BY_CODE.get(code or "") or _BY_STATUS.get(status) or AgentjailError
    if cls is QueueFull or cls is TooManySessions:
        return cls(message, status=status, code=code, retry_after=retry_after)
    if cls is SessionEnded:
        reason = (error or {}).get("ended_reason")
        return SessionEnded(message, status=status, code=code, reason=reason if isinstance(reason, str) else None)
    return cls(message, status=status, code=code)
