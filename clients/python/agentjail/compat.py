"""A drop-in for the widely copied subprocess `CodeSandbox` shape.

An agent that used such a sandbox switches by changing one import:

    from agentjail.compat import CodeSandbox, TestCase, CodeFeedbackExtractor

    sandbox = CodeSandbox(timeout=30, max_memory_mb=256)
    result = sandbox.run(code, "add", [TestCase("small", (1, 2), expected_output=3)])
    if not result.success:
        hints = CodeFeedbackExtractor.extract(result)

What stays the same: the names, arguments, defaults and result fields
(`success, exit_code, stdout, stderr, exception, duration, max_memory_mb,
test_results, all_passed, to_dict()`), and `expected_output=None` meaning
"do not check the return value".

What is different, because the program now runs in a jail and the verdicts
are computed outside it:

- Expecting None: `expected_output=None` checks nothing (as before); to check
  that the function returns None, use `expected_output=EXPECT_NONE`.
- Arguments and expected values travel as JSON: tuples compare as lists,
  numbers by value (3 == 3.0); a set or a custom object is refused with a
  TypeError naming the case. The returned value's repr is shown for values
  that have no JSON form, and such a value fails an `expected_output` check.
- `expected_type` is the exact builtin type name (`type(x).__name__`), so
  "int" does not accept True; `expected_exception` also passes for a subclass.
- Nothing is refused by string matching (`allow_imports` and
  `forbidden_modules` are accepted and ignored): the jail is the boundary.
- A program that exits 0 but writes to stderr is a success.
- `setup_code` runs before `code` in the same program, so line numbers in
  tracebacks and feedback count from the first line of `setup_code`.
- Sandbox failures are not program failures: when the daemon cannot be
  reached or refuses the request, `run` raises an `agentjail.AgentjailError`
  instead of returning a failed result for an LLM to "repair". A full queue
  is retried after the daemon's Retry-After, for up to `timeout` seconds.
- `timeout` bounds CPU time as well as wall time (the jail's `cpu_time_ms`
  is set to it too), so that `timeout` is the one time limit, as it was.
- A program killed by a limit has an `exception` that names the limit and
  what to change: "MemoryError: The program was killed because it used
  more than its memory limit of 64.0 MiB (…) The limit is CodeSandbox's
  max_memory_mb=64: …", "TimeoutError: Timeout after 2s. The program was
  killed after running for 2.0 s of wall-clock time, …".
- Extra fields: `score`, `feedback` (the daemon's sentences), `kill_reason`,
  `files` (the collected files, `agentjail.CollectedFile`s), `environment`
  (the environment that ran it) and `raw` (the full `agentjail.Result`).
- Extra keyword arguments, to `CodeSandbox(...)` (for every run) and to
  `run`/`arun` (for one): `environment` (a daemon environment's name),
  `env` (environment variables), `files` (written into /workspace first:
  `{path: str | bytes}`), `collect` (glob patterns of files to return).

`success`, `all_passed` and `score`, as the original shape defines the
first two:

- `success`: the run did what was asked. With test cases: the program ran
  to its end and every case passed. Without: the program exited 0.
- `all_passed`: there were test cases and every one passed; False when
  there were none.
- `score`: the weighted fraction of test cases that passed (each case's
  `weight`; cases of weight 0 do not count); 0.0 when there were none.

So `score` is 1.0 when `all_passed` and below it otherwise (unless every
failed case has weight 0), and a run without test cases that exits 0 is
`success=True, all_passed=False, score=0.0`: it succeeded, and nothing was
tested.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from .aio import AsyncClient
from .client import Client
from .errors import QueueFull
from ._request import _files
from .types import CollectedFile, Result, TestReport

__all__ = ["CodeSandbox", "TestCase", "ExecutionResult", "SandboxResult", "CodeFeedbackExtractor", "EXPECT_NONE"]


class _ExpectNone:
    def __repr__(self) -> str:
        return "EXPECT_NONE"

    def __reduce__(self) -> str:
        return "EXPECT_NONE"


#: `TestCase(expected_output=EXPECT_NONE)` checks that the function returns None.
EXPECT_NONE: Any = _ExpectNone()


@dataclass
class TestCase:
    """One call of the function under test, and what it should give.

    `expected_output=None` checks no return value; EXPECT_NONE expects None.
    `weight` counts toward `ExecutionResult.score`.
    """

    __test__ = False  # not a test class, for pytest's collector

    name: str
    input_args: Sequence[Any] = ()
    input_kwargs: Dict[str, Any] = field(default_factory=dict)
    expected_output: Any = None
    expected_type: str = ""
    expected_exception: str = ""
    weight: float = 1.0

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"name": self.name, "input_args": str(tuple(self.input_args))}
        if self.expected_output is not None:
            d["expected_output"] = str(None if self.expected_output is EXPECT_NONE else self.expected_output)[:100]
        if self.expected_exception:
            d["expected_exception"] = self.expected_exception
        return d

    def to_request(self) -> Dict[str, Any]:
        """The case as docs/contract.md §3 has it."""
        d: Dict[str, Any] = {"name": self.name, "args": list(self.input_args), "kwargs": dict(self.input_kwargs)}
        if self.expected_output is EXPECT_NONE:
            d["expected"] = None
        elif self.expected_output is not None:
            d["expected"] = self.expected_output
        if self.expected_type:
            d["expected_type"] = self.expected_type
        if self.expected_exception:
            d["expected_exception"] = self.expected_exception
        try:
            json.dumps(d, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise TypeError(f"TestCase {self.name!r}: arguments and expected_output must be JSON values "
                            f"(None, bool, int, float, str, list/tuple, dict with str keys): {e}") from None
        return d


@dataclass
class ExecutionResult:
    """The outcome of `CodeSandbox.run`, in the subprocess sandbox's shape.

    `success`: with test cases, the program ran to its end and every case
    passed; without, it exited 0. `all_passed`: there were test cases and
    every one passed (False without cases). `score`: the weighted fraction
    of cases that passed (0.0 without cases). `duration` is the program's
    wall time in seconds, `max_memory_mb` its peak memory (MiB, measured by
    the kernel), `test_results` one dict per case: name, passed, output
    (repr of the returned value), expected (repr of the TestCase's own
    expected_output), detail, duration_ms, weight. `exception` is the
    uncaught exception's traceback tail, or for a program a limit killed,
    which limit and what to change.
    """

    success: bool = False
    exit_code: int = -1
    stdout: str = ""
    stderr: str = ""
    exception: str = ""
    duration: float = 0.0
    max_memory_mb: float = 0.0
    test_results: List[Dict[str, Any]] = field(default_factory=list)
    all_passed: bool = False
    score: float = 0.0
    feedback: List[str] = field(default_factory=list)
    kill_reason: str = ""
    files: List[CollectedFile] = field(default_factory=list)
    environment: str = ""
    raw: Optional[Result] = field(default=None, repr=False, compare=False)

    def file(self, path: Union[str, bytes]) -> CollectedFile:
        """The collected file at `path`; KeyError when it was not collected."""
        for f in self.files:
            if isinstance(f, CollectedFile) and (f.path_bytes == path if isinstance(path, bytes) else f.path == path):
                return f
        raise KeyError(path)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "success": self.success,
            "exit_code": self.exit_code,
            "stdout": self.stdout[:500],
            "stderr": self.stderr[:500],
            "exception": self.exception[:300],
            "duration": f"{self.duration:.2f}s",
            "max_memory_mb": f"{self.max_memory_mb:.1f}",
            "test_results": self.test_results,
            "all_passed": self.all_passed,
            "score": round(self.score, 4),
            "kill_reason": self.kill_reason,
        }


#: The name some copies of the shape use for the result class.
SandboxResult = ExecutionResult

# The kind of failure a kill reason is, named like the Python exception a
# subprocess sandbox would have shown for it.
_KILL_KIND = {"memory_limit": "MemoryError", "wall_timeout": "TimeoutError", "cpu_timeout": "TimeoutError"}


class CodeSandbox:
    """Runs code, and optionally test cases against one of its functions, in
    an agentjail jail through the daemon at `socket` (default
    $AGENTJAIL_SOCKET, else /run/agentjail/agentjail.sock).

    `timeout` (seconds) becomes the jail's wall-time limit, and its CPU-time
    limit too, and `max_memory_mb` its memory limit (the cgroup's, which
    counts every process of the program, not RLIMIT_AS).

    Keyword arguments that the subprocess shape did not have, for every
    run of this sandbox (`run` and `arun` take them too, for one run):
    `environment`, the name of one of the daemon's environments (its
    default when None); `env`, environment variables; `files`, files
    written into /workspace before the program starts (`{path: str |
    bytes}`, or a list of `agentjail.File`s or dicts); `collect`, glob
    patterns of files to return in `ExecutionResult.files`.
    """

    def __init__(self, timeout: float = 30.0, max_memory_mb: int = 256, allow_imports: bool = True,
                 forbidden_modules: Optional[List[str]] = None, socket: Optional[str] = None, *,
                 environment: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
                 files: Any = None, collect: Union[str, Sequence[str], None] = None) -> None:
        self.timeout = timeout
        self.max_memory_mb = max_memory_mb
        self.allow_imports = allow_imports  # accepted for compatibility; the jail is the boundary
        self.forbidden_modules = forbidden_modules or []
        self.socket = socket
        self.environment = environment
        self.env = dict(env) if env is not None else None
        self.files = files
        self.collect = collect
        self._client = Client(socket)
        self._aclient = AsyncClient(socket)

    def _request(self, code: str, func_name: str, test_cases: Optional[List[TestCase]], setup_code: str,
                 environment: Optional[str], env: Optional[Mapping[str, str]], files: Any,
                 collect: Union[str, Sequence[str], None]) -> Dict[str, Any]:
        """The keyword arguments of Client.run for one run."""
        if setup_code:
            code = setup_code.rstrip("\n") + "\n" + code
        time_ms = max(1, int(math.ceil(self.timeout * 1000)))
        req: Dict[str, Any] = {
            "code": code,
            "limits": {"wall_time_ms": time_ms, "cpu_time_ms": time_ms,
                       "memory_bytes": int(self.max_memory_mb * 1024 * 1024)},
        }
        if test_cases:
            req["tests"] = {"function": func_name, "cases": [tc.to_request() for tc in test_cases]}
        environment = environment if environment is not None else self.environment
        if environment is not None:
            req["environment"] = environment
        if self.env is not None or env is not None:
            req["env"] = dict(self.env or {}, **dict(env or {}))
        if self.files is not None or files is not None:
            # By path: the run's replace the sandbox's (one without a path is the daemon's to refuse).
            merged: Dict[Any, Dict[str, Any]] = {}
            for f in (_files(self.files) if self.files is not None else []) + (_files(files) if files is not None else []):
                merged[f.get("path")] = f
            req["files"] = list(merged.values())
        patterns: List[str] = []
        for c in (self.collect, collect):
            for g in ([c] if isinstance(c, str) else list(c or [])):
                if g not in patterns:
                    patterns.append(g)
        if patterns:
            req["collect"] = patterns
        return req

    def run(self, code: str, func_name: str = "", test_cases: Optional[List[TestCase]] = None,
            setup_code: str = "", *, environment: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
            files: Any = None, collect: Union[str, Sequence[str], None] = None) -> ExecutionResult:
        """Run `code`; with `test_cases`, call `func_name` with each. A failing,
        crashing or killed program is a result with success False; a sandbox
        that cannot run it raises agentjail.AgentjailError. `environment`,
        `env`, `files` and `collect` add to the sandbox's own for this run."""
        req = self._request(code, func_name, test_cases, setup_code, environment, env, files, collect)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                r = self._client.run(**req)
                break
            except QueueFull as e:
                wait = max(0.05, e.retry_after if e.retry_after is not None else 1.0)
                if time.monotonic() + wait > deadline:
                    raise
                time.sleep(wait)
        return _convert(r, test_cases or [], self.timeout, self.max_memory_mb)

    async def arun(self, code: str, func_name: str = "", test_cases: Optional[List[TestCase]] = None,
                   setup_code: str = "", *, environment: Optional[str] = None,
                   env: Optional[Mapping[str, str]] = None, files: Any = None,
                   collect: Union[str, Sequence[str], None] = None) -> ExecutionResult:
        """`run` for asyncio callers (agentjail.AsyncClient; no threads)."""
        import asyncio

        req = self._request(code, func_name, test_cases, setup_code, environment, env, files, collect)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                r = await self._aclient.run(**req)
                break
            except QueueFull as e:
                wait = max(0.05, e.retry_after if e.retry_after is not None else 1.0)
                if time.monotonic() + wait > deadline:
                    raise
                await asyncio.sleep(wait)
        return _convert(r, test_cases or [], self.timeout, self.max_memory_mb)


def _convert(r: Result, cases: List[TestCase], timeout: Optional[float],
             max_memory_mb: Optional[float] = None) -> ExecutionResult:
    out = ExecutionResult(
        exit_code=r.exit_code,
        stdout=r.stdout,
        stderr=r.stderr,
        duration=r.wall_time_ms / 1000.0,
        max_memory_mb=(r.peak_memory_bytes or 0) / (1 << 20),
        feedback=list(r.feedback),
        kill_reason=r.kill_reason,
        files=list(r.files),
        environment=r.environment,
        raw=r,
    )
    out.test_results = _test_results(r.tests, cases)
    if cases:
        # success, all_passed and score as the module's docstring defines them
        total_weight = sum(max(0.0, tc.weight) for tc in cases)
        got = sum(max(0.0, tc.weight) for tc, tr in zip(cases, out.test_results) if tr["passed"])
        out.all_passed = (r.tests is not None and r.tests.total > 0 and r.tests.all_passed
                          and all(tr["passed"] for tr in out.test_results))
        out.score = 1.0 if out.all_passed else (got / total_weight if total_weight > 0 else 0.0)
        out.success = r.status == "ok" and out.all_passed
    else:
        out.success = r.status == "ok"
        out.all_passed = False
        out.score = 0.0
    out.exception = _exception_text(r, timeout, max_memory_mb)
    return out


def _test_results(report: Optional[TestReport], cases: List[TestCase]) -> List[Dict[str, Any]]:
    """One dict per TestCase, in order; a case the daemon reported no verdict
    for (the program died first) is failed with a detail that says so."""
    reported = list(report.results) if report is not None else []
    used = [False] * len(reported)
    out = []
    for i, tc in enumerate(cases):
        tr = None
        if i < len(reported) and not used[i] and reported[i].name == tc.name:
            tr, used[i] = reported[i], True
        else:
            for j, cand in enumerate(reported):
                if not used[j] and cand.name == tc.name:
                    tr, used[j] = cand, True
                    break
        expected = None if tc.expected_output is EXPECT_NONE else tc.expected_output
        d: Dict[str, Any] = {
            "name": tc.name,
            "passed": bool(tr.passed) if tr is not None else False,
            "output": _output_repr(tr.output)[:200] if tr is not None else "",
            "expected": repr(expected)[:200],
            "detail": tr.detail if tr is not None else "not run: the program ended before this case",
            "duration_ms": tr.duration_ms if tr is not None else 0,
            "weight": tc.weight,
        }
        out.append(d)
    return out


def _output_repr(output: str) -> str:
    """The daemon gives the returned value as JSON text (or its repr when it
    has none); the shape showed repr(value)."""
    if not output:
        return output
    try:
        return repr(json.loads(output))
    except ValueError:
        return output


def _tail(text: str, n: int = 5) -> str:
    lines = text.strip().split("\n")
    return "\n".join(lines[-n:])


# How the daemon's feedback sentence about a kill starts (its other
# sentences, about the exception and the tests, come first).
_KILL_SENTENCE = ("The program was killed", "The run was", "The call was")


def _kill_sentence(r: Result) -> str:
    """The sentence that says which limit ended the program: the daemon's
    own when it gave one, else one made from the result's figures."""
    for s in r.feedback:
        if isinstance(s, str) and s.startswith(_KILL_SENTENCE):
            return s
    if r.kill_reason == "memory_limit":
        limit = f" of {r.memory_limit_bytes / (1 << 20):.1f} MiB" if r.memory_limit_bytes else ""
        return f"The program was killed because it used more than its memory limit{limit}; use less memory."
    if r.kill_reason == "wall_timeout":
        return (f"The program was killed after running for {r.wall_time_ms / 1000:.1f} s of wall-clock time, "
                "its limit; look for an infinite loop, a blocking read or a long sleep.")
    if r.kill_reason == "cpu_timeout":
        return (f"The program was killed after using {r.cpu_time_ms / 1000:.1f} s of CPU time, past its limit; "
                "make the algorithm faster or look for an infinite loop.")
    return f"The sandbox killed the program ({r.kill_reason or 'no reason given'})."


def _exception_text(r: Result, timeout: Optional[float], max_memory_mb: Optional[float] = None) -> str:
    if r.status == "killed":
        # The limit that was hit, not the first feedback sentence: with
        # tests, that one is "1 of 1 tests failed."
        kind = _KILL_KIND.get(r.kill_reason, "Killed")
        text = _kill_sentence(r)
        if r.kill_reason == "wall_timeout" and timeout is not None:
            text = f"Timeout after {timeout:g}s. {text}"
        if r.kill_reason == "memory_limit" and max_memory_mb is not None:
            text += f" The limit is CodeSandbox's max_memory_mb={max_memory_mb:g}: raise it if the program needs more."
        elif r.kill_reason in ("wall_timeout", "cpu_timeout") and timeout is not None:
            text += f" The limit is CodeSandbox's timeout={timeout:g}: raise it if the program needs longer."
        return f"{kind}: {text}"
    if r.exception is not None:
        if r.exception.traceback:
            return _tail(r.exception.traceback)
        return f"{r.exception.type}: {r.exception.message}"
    if r.status == "signaled":
        return f"Crashed with signal {r.signal}" + (f"\n{_tail(r.stderr)}" if r.stderr.strip() else "")
    if r.status == "error" and r.stderr.strip():
        return _tail(r.stderr)
    return ""


class CodeFeedbackExtractor:
    """Turns a result into short, actionable suggestions for a retry loop:
    the daemon's feedback sentences first (failed cases with expected vs got,
    the exception with its line, the limit that was hit), then any failed
    case they do not mention, then a hint for the kind of error."""

    ERROR_PATTERNS: Dict[str, str] = {
        "NameError": ("A name is not defined: check spelling, scope and missing imports; each run starts a fresh "
                      "interpreter, so nothing defined in an earlier run exists in this one."),
        "TypeError": "A value has the wrong type for an operation or call: check argument types and counts.",
        "ValueError": "A value is out of range for an operation: check the parameter constraints.",
        "IndexError": "An index is out of range: check the bounds and empty sequences.",
        "KeyError": "A dict key is missing: check that it exists or use .get().",
        "AttributeError": "An object has no such attribute: check the method or attribute name.",
        "ImportError": ("An import failed: check the name; the module may not be installed in this sandbox's "
                        "environment (CodeSandbox(environment=...) picks another)."),
        "ModuleNotFoundError": ("A module is missing: check the name; it may not be installed in this sandbox's "
                                "environment (CodeSandbox(environment=...) picks another)."),
        "SyntaxError": "The code does not parse: check indentation, brackets and colons.",
        "IndentationError": "The indentation is inconsistent: use 4 spaces per level.",
        "ZeroDivisionError": "A division by zero: guard the denominator.",
        "RecursionError": "The recursion is too deep: add a base case or use iteration.",
        "TimeoutError": "The code ran out of time: look for an infinite loop or a slower-than-needed algorithm.",
        "MemoryError": "The code ran out of memory: use less, e.g. generators or processing in chunks.",
        "PermissionError": "The sandbox refused an operation: do without it (no network, processes or files outside /workspace).",
    }

    @classmethod
    def extract(cls, result: Union[ExecutionResult, Result]) -> List[str]:
        if isinstance(result, Result):
            result = _from_result(result)
        suggestions: List[str] = list(result.feedback)

        joined = "\n".join(suggestions)
        for tc in result.test_results:
            if not tc.get("passed", True):
                name = str(tc.get("name", "unknown"))
                if f"'{name}'" in joined or f'"{name}"' in joined:
                    continue
                suggestions.append(f"Test '{name}' failed: {tc.get('detail', '')}")

        haystack = "\n".join([result.exception, result.stderr[-2000:]] +
                             [str(tc.get("detail", "")) for tc in result.test_results if not tc.get("passed", True)])
        for error_type, hint in cls.ERROR_PATTERNS.items():
            if error_type in haystack and hint not in suggestions:
                suggestions.append(hint)

        if not result.success and not suggestions:
            suggestions.append("The code failed: check its logic and edge cases.")
            if result.stderr.strip():
                suggestions.append(f"Error: {result.stderr.strip()[-200:]}")
        return suggestions


def _from_result(r: Result) -> ExecutionResult:
    cases = [TestCase(name=t.name) for t in (r.tests.results if r.tests else []) if hasattr(t, "name")]
    return _convert(r, cases, None)
