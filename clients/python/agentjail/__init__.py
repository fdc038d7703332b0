"""Client of the agentjail daemon: run untrusted Python in a kernel-level
jail and get back what happened (docs/contract.md §2 and §3).

    from agentjail import Client
    r = Client().run("print(sum(range(10)))")
    r.status, r.stdout          # ("ok", "45\\n")

    with Client().session() as s:       # a live interpreter across calls
        s.run("x = 41")
        s.run("x + 1").value    # "42"

`AsyncClient` has the same calls for asyncio; `agentjail.compat` is a
drop-in for the subprocess `CodeSandbox` shape. Standard library only.
"""

from .aio import AsyncClient, AsyncSession
from .client import DEFAULT_SOCKET, Client, Session
from .stream import Event
from .errors import (AgentjailError, DaemonUnavailable, Forbidden, InvalidRequest, NotFound, ProtocolError, QueueFull,
                     SessionBusy, SessionEnded, SessionLost, SetupFailed, ShuttingDown, Timeout, TooLarge, TooManySessions,
                     Unauthorized)
from .types import (NOT_SET, Case, CollectedFile, Display, ExceptionInfo, File, Limits, Result, SeccompReport, SessionInfo,
                    SessionResult, SessionState, SyscallCount, TestReport, TestResult, Tests)

__version__ = "0.1.0"

__all__ = [
    "Client", "AsyncClient", "Session", "AsyncSession", "DEFAULT_SOCKET", "Event",
    "Result", "ExceptionInfo", "TestReport", "TestResult", "CollectedFile", "Display", "SeccompReport", "SyscallCount",
    "SessionResult", "SessionState", "SessionInfo",
    "Limits", "Tests", "Case", "File", "NOT_SET",
    "AgentjailError", "InvalidRequest", "Forbidden", "TooLarge", "QueueFull", "ShuttingDown", "SetupFailed",
    "NotFound", "SessionBusy", "SessionEnded", "SessionLost", "TooManySessions", "Unauthorized",
    "DaemonUnavailable", "ProtocolError", "Timeout",
]
