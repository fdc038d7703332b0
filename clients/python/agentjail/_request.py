"""The request bodies of the contract (docs/contract.md sections 3 and 6),
built from the client's types: a run's, a session's start and a session
call's. Re-exported by agentjail.types."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from ._command import program
from .types import NOT_SET, Case, File, Limits, Tests, _case_dict, _file_dict


def _files(files: Any) -> List[Dict[str, Any]]:
    if isinstance(files, Mapping):
        return [_file_dict(p, c) for p, c in files.items()]
    if isinstance(files, (str, bytes)) or not isinstance(files, Iterable):
        raise TypeError("files: give a dict {path: str | bytes} or a list of {path, content[, encoding]} dicts")
    out = []
    for f in files:
        if isinstance(f, File):
            out.append(f.to_dict())
        elif isinstance(f, Mapping):
            d = dict(f)
            if isinstance(d.get("content"), (bytes, bytearray, memoryview)):
                d.update(_file_dict(d.get("path"), d["content"]))  # type: ignore[arg-type]
            out.append(d)
        else:
            raise TypeError(f"files: an item must be a dict or a File, not {type(f).__name__}")
    return out


def build_request(code: Optional[str] = None, *, stdin: Union[str, bytes, None] = None, files: Any = None,
                  collect: Union[str, Iterable[str], None] = None,
                  limits: Union[Limits, Mapping[str, Any], None] = None,
                  tests: Union[Tests, Mapping[str, Any], None] = None,
                  env: Optional[Mapping[str, str]] = None,
                  on_forbidden_syscall: Optional[str] = None,
                  environment: Optional[str] = None,
                  start: Optional[str] = None,
                  command: Optional[Sequence[str]] = None,
                  network: Union[str, Sequence[str], Mapping[str, Any], None] = None) -> Dict[str, Any]:
    """The JSON body of POST /v1/run. Only what was given is sent, so the
    daemon's defaults apply to the rest. Type mistakes are caught here;
    values are the daemon's to judge (it answers InvalidRequest)."""
    req = _code_request(code, stdin=stdin, files=files, collect=collect, limits=limits, tests=tests, command=command)
    if env is not None:
        req["env"] = _env(env)
    if on_forbidden_syscall is not None:
        req["on_forbidden_syscall"] = on_forbidden_syscall
    _put_str(req, "environment", environment)
    _put_str(req, "start", start)
    _put_network(req, network)
    return req


def _put_network(req: Dict[str, Any], network: Union[str, Sequence[str], Mapping[str, Any], None]) -> None:
    """"network" (docs/contract.md §8): a policy's name, a list of allow
    entries ("pypi.org:443"), or the object itself."""
    if network is None:
        return
    if isinstance(network, str):
        req["network"] = {"policy": network}
    elif isinstance(network, Mapping):
        req["network"] = dict(network)
    elif isinstance(network, (list, tuple)) and all(isinstance(e, str) for e in network):
        req["network"] = {"allow": list(network)}
    else:
        raise TypeError("network must be a policy name, a list of \"host:port\" entries, "
                        f"or {{\"policy\": ...}} / {{\"allow\": [...]}}, not {type(network).__name__}")


def build_session_request(*, environment: Optional[str] = None,
                          limits: Union[Limits, Mapping[str, Any], None] = None,
                          env: Optional[Mapping[str, str]] = None, files: Any = None,
                          idle_timeout_ms: Optional[int] = None, start: Optional[str] = None,
                          network: Union[str, Sequence[str], Mapping[str, Any], None] = None) -> Dict[str, Any]:
    """The JSON body of POST /v1/sessions; only what was given is sent.
    `limits` are the session's own (memory_bytes, pids, tmp_bytes,
    cpu_time_ms in total, open_files, file_size_bytes)."""
    req: Dict[str, Any] = {}
    _put_str(req, "environment", environment)
    if limits is not None:
        req["limits"] = _limits(limits)
    if env is not None:
        req["env"] = _env(env)
    if files is not None:
        req["files"] = _files(files)
    if idle_timeout_ms is not None:
        if isinstance(idle_timeout_ms, bool) or not isinstance(idle_timeout_ms, int):
            raise TypeError(f"idle_timeout_ms must be an int (milliseconds), not {type(idle_timeout_ms).__name__}")
        req["idle_timeout_ms"] = idle_timeout_ms
    _put_str(req, "start", start)
    _put_network(req, network)
    return req


def build_session_run(code: Optional[str] = None, *, stdin: Union[str, bytes, None] = None, files: Any = None,
                      collect: Union[str, Iterable[str], None] = None,
                      tests: Union[Tests, Mapping[str, Any], None] = None,
                      limits: Union[Limits, Mapping[str, Any], None] = None,
                      command: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """The JSON body of POST /v1/sessions/{id}/run. `limits` are this
    call's own (wall_time_ms, cpu_time_ms, output_bytes)."""
    return _code_request(code, stdin=stdin, files=files, collect=collect, limits=limits, tests=tests, command=command)


def _code_request(code: Optional[str], *, stdin: Union[str, bytes, None], files: Any,
                  collect: Union[str, Iterable[str], None],
                  limits: Union[Limits, Mapping[str, Any], None],
                  tests: Union[Tests, Mapping[str, Any], None],
                  command: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    req: Dict[str, Any] = program(code, command)
    if stdin is not None:
        if isinstance(stdin, (bytes, bytearray)):
            try:
                stdin = bytes(stdin).decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError("stdin: the contract carries stdin as text; these bytes are not UTF-8") from None
        if not isinstance(stdin, str):
            raise TypeError(f"stdin must be str or bytes, not {type(stdin).__name__}")
        req["stdin"] = stdin
    if files is not None:
        req["files"] = _files(files)
    if collect is not None:
        req["collect"] = [collect] if isinstance(collect, str) else [str(g) for g in collect]
    if limits is not None:
        req["limits"] = _limits(limits)
    if tests is not None:
        if isinstance(tests, Tests):
            req["tests"] = tests.to_dict()
        elif isinstance(tests, Mapping):
            t = dict(tests)
            t["cases"] = [_case_dict(c) for c in t.get("cases", [])]
            req["tests"] = t
        else:
            raise TypeError(f"tests must be a Tests or a dict, not {type(tests).__name__}")
    return req


def _limits(limits: Union[Limits, Mapping[str, Any]]) -> Dict[str, Any]:
    if isinstance(limits, Limits):
        return limits.to_dict()
    if isinstance(limits, Mapping):
        return {k: v for k, v in limits.items() if v is not None}
    raise TypeError(f"limits must be a Limits or a dict, not {type(limits).__name__}")


def _env(env: Mapping[str, str]) -> Dict[str, str]:
    if not isinstance(env, Mapping):
        raise TypeError(f"env must be a dict of str to str, not {type(env).__name__}")
    return {str(k): str(v) for k, v in env.items()}


def _put_str(req: Dict[str, Any], name: str, value: Optional[str]) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    req[name] = value
