"""The run request and the result of docs/contract.md §3, as Python values.

Results are tolerant: a field the daemon sends that this client does not know
(a newer daemon) lands in the `extra` dict of the object it belongs to, and a
field it leaves out (an older daemon) takes its default, so a client never
breaks on a daemon of another version.
"""

from __future__ import annotations

import base64
import builtins
import binascii
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union


__all__ = [
    "NOT_SET",
    "Limits",
    "Case",
    "Tests",
    "File",
    "Result",
    "ExceptionInfo",
    "TestReport",
    "TestResult",
    "CollectedFile",
    "SeccompReport",
    "SyscallCount",
    "SessionResult",
    "SessionState",
    "SessionInfo",
    "build_request",
    "build_session_request",
    "build_session_run",
]


class _NotSet:
    """The type of NOT_SET: "no value given", as opposed to None."""

    _instance: Optional["_NotSet"] = None

    def __new__(cls) -> "_NotSet":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_SET"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "NOT_SET"


#: "No expected value": a `Case` with `expected=NOT_SET` checks no return
#: value, while `expected=None` checks that the function returned None.
NOT_SET: Any = _NotSet()


# ---------------------------------------------------------------- request


@dataclass
class Limits:
    """Per-run limits (docs/contract.md §3); a field left None takes the daemon's
    configured default. Sizes in bytes, times in milliseconds."""

    memory_bytes: Optional[int] = None
    wall_time_ms: Optional[int] = None
    cpu_time_ms: Optional[int] = None
    pids: Optional[int] = None
    output_bytes: Optional[int] = None
    tmp_bytes: Optional[int] = None
    open_files: Optional[int] = None
    file_size_bytes: Optional[int] = None
    display_bytes: Optional[int] = None

    def to_dict(self) -> Dict[str, int]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) is not None}


@dataclass
class Case:
    """One test case: call the function with `args` and `kwargs`.

    `expected` is compared by the daemon, outside the jail (numbers by value,
    tuples as lists); leave it NOT_SET to check no value, set it to None to
    expect None. `expected_type` is a builtin type name checked with
    `type(x).__name__`; `expected_exception` passes when that class or a
    subclass is raised.
    """

    __test__ = False  # not a test class, for pytest's collector

    name: str
    args: Sequence[Any] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    expected: Any = NOT_SET
    expected_type: Optional[str] = None
    expected_exception: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"name": self.name, "args": list(self.args), "kwargs": dict(self.kwargs)}
        if self.expected is not NOT_SET:
            d["expected"] = self.expected
        if self.expected_type:
            d["expected_type"] = self.expected_type
        if self.expected_exception:
            d["expected_exception"] = self.expected_exception
        return d


@dataclass
class Tests:
    """The `tests` of a request: cases run against `function`."""

    __test__ = False

    function: str
    cases: List[Union[Case, Mapping[str, Any]]] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        return {"function": self.function, "cases": [_case_dict(c) for c in self.cases]}


@dataclass
class File:
    """A file written into /workspace before the program starts: `content`
    str is sent as utf-8, bytes as base64."""

    path: str
    content: Union[str, bytes]

    def to_dict(self) -> Dict[str, Any]:
        return _file_dict(self.path, self.content)


def _case_dict(c: Union[Case, Mapping[str, Any]]) -> Dict[str, Any]:
    if isinstance(c, Case):
        return c.to_dict()
    if isinstance(c, Mapping):
        d = dict(c)
        if "args" in d and not isinstance(d["args"], list):
            d["args"] = list(d["args"])
        if d.get("expected", None) is NOT_SET:
            del d["expected"]
        return d
    raise TypeError(f"tests: a case must be a Case or a dict, not {type(c).__name__}")


def _file_dict(path: str, content: Union[str, bytes, bytearray, memoryview]) -> Dict[str, Any]:
    if not isinstance(path, str):
        raise TypeError(f"files: a path must be a str, not {type(path).__name__}")
    if isinstance(content, str):
        return {"path": path, "content": content, "encoding": "utf-8"}
    if isinstance(content, (bytes, bytearray, memoryview)):
        return {"path": path, "content": base64.b64encode(bytes(content)).decode("ascii"), "encoding": "base64"}
    raise TypeError(f"files[{path!r}]: content must be str or bytes, not {type(content).__name__}")


# ---------------------------------------------------------------- result


def _from_dict(cls: Any, d: Mapping[str, Any], **convert: Any) -> Any:
    """An instance of the dataclass cls from a JSON object: known fields by
    name (converted by `convert[name]` when the value is not null), the
    rest kept in `extra`."""
    names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
    kw: Dict[str, Any] = {}
    extra: Dict[str, Any] = {}
    for k, v in d.items():
        if k in names:
            fn = convert.get(k)
            kw[k] = fn(v) if fn is not None and v is not None else v
        else:
            extra[k] = v
    obj = cls(**kw)
    obj.extra = extra
    return obj


def _obj(cls: Any) -> Any:
    def conv(v: Any) -> Any:
        return cls.from_dict(v) if isinstance(v, Mapping) else v
    return conv


def _exact_bytes(text: Optional[str], b64: Optional[str], what: str) -> bytes:
    """The exact bytes of a text field that has a base64 twin: the twin
    when the daemon sent one (the bytes were not valid UTF-8), else the
    text, which is then exactly the bytes as UTF-8."""
    if b64 is not None:
        try:
            return base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError, TypeError) as e:
            raise ValueError(f"{what}: bad base64 from the daemon: {e}") from None
    return (text or "").encode("utf-8")


def _list_of(cls: Any) -> Any:
    def conv(v: Any) -> Any:
        if not isinstance(v, list):
            return v
        return [cls.from_dict(x) if isinstance(x, Mapping) else x for x in v]
    return conv


@dataclass
class ExceptionInfo:
    """The uncaught exception: `line` is in the submitted code."""

    type: str = ""
    message: str = ""
    line: Optional[int] = None
    traceback: str = ""
    extra: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ExceptionInfo":
        return _from_dict(cls, d)

    def __str__(self) -> str:
        s = f"{self.type}: {self.message}" if self.message else self.type
        return f"{s} (line {self.line})" if self.line is not None else s


@dataclass
class TestResult:
    """The verdict of one case; `output` is the return value as JSON text
    (or its repr when it has no JSON form)."""

    __test__ = False

    name: str = ""
    passed: bool = False
    output: str = ""
    detail: str = ""
    duration_ms: float = 0.0
    extra: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "TestResult":
        return _from_dict(cls, d)


@dataclass
class TestReport:
    """The `tests` of a result: verdicts computed by the daemon."""

    __test__ = False

    total: int = 0
    passed: int = 0
    failed: int = 0
    all_passed: bool = False
    results: List[TestResult] = field(default_factory=list)
    extra: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "TestReport":
        return _from_dict(cls, d, results=_list_of(TestResult))


@dataclass
class CollectedFile:
    """A file collected after the run; `error` instead of content when it
    could not be collected. `read_bytes()` decodes the content.

    `path` is text: a name that is not valid UTF-8 has U+FFFD in place of
    the bad bytes, and then `path_base64` holds the exact name (else None);
    `path_bytes` is the exact name either way."""

    path: str = ""
    size: Optional[int] = None
    encoding: str = "utf-8"
    content: Optional[str] = None
    error: Optional[str] = None
    path_base64: Optional[str] = None
    extra: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "CollectedFile":
        return _from_dict(cls, d)

    @property
    def path_bytes(self) -> bytes:
        """The file's name relative to /workspace, byte for byte."""
        return _exact_bytes(self.path, self.path_base64, "path_base64")

    def read_bytes(self) -> bytes:
        """The file's bytes. Raises OSError when the daemon could not
        collect it (the message is its `error`)."""
        if self.error:
            raise OSError(f"{self.path}: not collected: {self.error}")
        if self.content is None:
            return b""
        if self.encoding == "base64":
            try:
                return base64.b64decode(self.content, validate=True)
            except binascii.Error as e:
                raise ValueError(f"{self.path}: bad base64 content: {e}") from None
        return self.content.encode("utf-8")

    def read_text(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        if self.encoding != "base64" and self.content is not None and not self.error:
            return self.content
        return self.read_bytes().decode(encoding, errors)


@dataclass
class Display:
    """One rich output of the run, as a notebook would show it: a figure
    (`mime` "image/png"), or a trailing value's HTML or Markdown.
    `read_bytes()` is its content (an image decoded from base64, text as
    UTF-8), `bytes` its size. In a notebook it shows itself."""

    mime: str = ""
    data: str = ""
    bytes: int = 0
    extra: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Display":
        return _from_dict(cls, d)

    @property
    def is_text(self) -> bool:
        return self.mime.startswith("text/")

    # builtins.bytes: in this class, "bytes" is the field above.
    def read_bytes(self) -> builtins.bytes:
        """The content, byte for byte: the image, or the text as UTF-8."""
        if self.is_text:
            return self.data.encode("utf-8")
        try:
            return base64.b64decode(self.data, validate=True)
        except binascii.Error as e:
            raise ValueError(f"display {self.mime}: bad base64 from the daemon: {e}") from None

    def _repr_png_(self) -> Optional[builtins.bytes]:
        return self.read_bytes() if self.mime == "image/png" else None

    def _repr_html_(self) -> Optional[str]:
        return self.data if self.mime == "text/html" else None

    def _repr_markdown_(self) -> Optional[str]:
        return self.data if self.mime == "text/markdown" else None



@dataclass
class SyscallCount:
    """One forbidden call and how often it was made; `detail` names the
    arguments it was forbidden for ("AF_INET, SOCK_RAW"), "" when any
    arguments are."""

    syscall: str = ""
    number: int = -1
    count: int = 0
    detail: str = ""
    extra: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "SyscallCount":
        return _from_dict(cls, d)


@dataclass
class SeccompReport:
    """The forbidden system calls the program made: the first one in
    `syscall`/`number`/`detail` (`syscall` is "" when the daemon cannot
    name it), every one counted in `calls`."""

    syscall: str = ""
    number: int = -1
    detail: str = ""
    calls: List[SyscallCount] = field(default_factory=list)
    extra: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "SeccompReport":
        return _from_dict(cls, d, calls=_list_of(SyscallCount))


@dataclass
class Result:
    """What happened to one program (docs/contract.md §3).

    `status`: "ok" (exit 0), "error" (non-zero exit, e.g. an uncaught
    exception), "signaled" (a signal no limit sent), "killed" (a limit or
    the daemon ended it; `kill_reason` says which). Fields the daemon cannot
    know are None (`peak_memory_bytes`, `pids_peak`).

    `stdout` and `stderr` are text: bytes that are not valid UTF-8 read as
    U+FFFD. `stdout_bytes` and `stderr_bytes` are always the exact bytes
    (from `stdout_base64`/`stderr_base64`, which the daemon adds only when
    the stream was not valid UTF-8). `environment` is the environment that
    ran it, `start` "warm" or "cold" ("" from a daemon that does not say).
    """

    id: str = ""
    status: str = ""
    exit_code: int = 0
    signal: str = ""
    kill_reason: str = ""
    seccomp: Optional[SeccompReport] = None
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    wall_time_ms: float = 0.0
    cpu_time_ms: float = 0.0
    peak_memory_bytes: Optional[int] = None
    memory_limit_bytes: Optional[int] = None
    exception: Optional[ExceptionInfo] = None
    tests: Optional[TestReport] = None
    feedback: List[str] = field(default_factory=list)
    files: List[CollectedFile] = field(default_factory=list)
    peak_memory_source: str = ""
    oom_kills: int = 0
    pids_peak: Optional[int] = None
    pids_max_hits: int = 0
    environment: str = ""
    start: str = ""
    stdout_base64: Optional[str] = None
    stderr_base64: Optional[str] = None
    #: What a notebook would show: matplotlib figures (PNG) and the trailing
    #: value's rich form, in order, up to `limits.display_bytes`;
    #: `display_truncated` says some were dropped.
    display: List[Display] = field(default_factory=list)
    display_truncated: bool = False
    node: str = ""  #: the node that ran it (Agentjail-Node; "" on the Unix socket)
    #: What the run did through the daemon's egress proxy (docs/contract.md
    #: §8), as sent: allowed, blocked, bytes_sent, bytes_received,
    #: connections [{host, port, ip, verdict, reason, sent, received, ms}],
    #: truncated. None for a run without `network`.
    network: Optional[Dict[str, Any]] = None
    #: Fields of a newer daemon that this client does not know, as sent.
    extra: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Result":
        return cls._fix(_from_dict(cls, d, **cls._convert()))

    @staticmethod
    def _convert() -> Dict[str, Any]:
        return dict(seccomp=_obj(SeccompReport), exception=_obj(ExceptionInfo), tests=_obj(TestReport),
                    files=_list_of(CollectedFile), display=_list_of(Display))

    @staticmethod
    def _fix(r: Any) -> Any:
        # null lists (an older daemon) read as empty, so callers can iterate
        if r.feedback is None:
            r.feedback = []
        if r.files is None:
            r.files = []
        if r.display is None:
            r.display = []
        return r

    @property
    def stdout_bytes(self) -> bytes:
        """What the program wrote to stdout, byte for byte (up to the output cap)."""
        return _exact_bytes(self.stdout, self.stdout_base64, "stdout_base64")

    @property
    def stderr_bytes(self) -> bytes:
        """What the program wrote to stderr, byte for byte (up to the output cap)."""
        return _exact_bytes(self.stderr, self.stderr_base64, "stderr_base64")

    @property
    def ok(self) -> bool:
        """The program exited 0 and every test (if any) passed."""
        return self.status == "ok" and (self.tests is None or self.tests.all_passed)

    def file(self, path: Union[str, bytes]) -> CollectedFile:
        """The collected file at `path` (str, or bytes to match a name that
        is not valid UTF-8 exactly); KeyError when it was not collected."""
        for f in self.files:
            if isinstance(f, CollectedFile) and (f.path_bytes == path if isinstance(path, bytes) else f.path == path):
                return f
        raise KeyError(path)


@dataclass
class SessionState:
    """Where a session stands after a call: `calls` made so far (this one
    included), `alive`, and `ended_reason` ("" while alive; else why it
    ended: "exited", "wall_timeout", "cpu_timeout", "memory_limit",
    "pids_limit", "idle_timeout", "max_lifetime", "deleted", "shutdown")."""

    id: str = ""
    calls: int = 0
    alive: bool = False
    ended_reason: str = ""
    extra: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "SessionState":
        return _from_dict(cls, d)


@dataclass
class SessionResult(Result):
    """The result of one call in a session: every field of `Result`, for
    this call, plus `value`, the repr of the code's trailing expression
    (capped by the daemon; None when the code does not end in an expression
    or the call did not reach it), and `session`, where the session stands
    after the call."""

    value: Optional[str] = None
    session: Optional[SessionState] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "SessionResult":
        return cls._fix(_from_dict(cls, d, session=_obj(SessionState), **cls._convert()))


@dataclass
class SessionInfo:
    """A session as the daemon describes it (GET /v1/sessions/{id}, and the
    answer to its creation, which carries only id, environment, start,
    limits, idle_timeout_ms and expires_at: the other fields are then None).

    Times are RFC 3339 strings in UTC, as sent. `memory_bytes` is the
    session's memory now, `peak_memory_bytes` its peak since it started and
    `cpu_time_ms` its CPU time since it started (None where the kernel
    cannot tell). `limits` are the session's limits in force.
    """

    id: str = ""
    environment: str = ""
    start: str = ""
    created: Optional[str] = None
    last_used: Optional[str] = None
    expires_at: Optional[str] = None
    calls: Optional[int] = None
    alive: Optional[bool] = None
    ended_reason: Optional[str] = None
    memory_bytes: Optional[int] = None
    peak_memory_bytes: Optional[int] = None
    cpu_time_ms: Optional[float] = None
    limits: Dict[str, Any] = field(default_factory=dict)
    idle_timeout_ms: Optional[int] = None
    node: str = ""  # the node that holds it (docs/contract.md §7)
    endpoint: str = ""  # that node's address, host:port; "" without a remote listener
    extra: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "SessionInfo":
        info = _from_dict(cls, d)
        if info.limits is None:
            info.limits = {}
        return info


# The request builders live in _request.py (they build JSON from the types
# above); imported last, as they import these types.
from ._request import build_request, build_session_request, build_session_run  # noqa: E402
