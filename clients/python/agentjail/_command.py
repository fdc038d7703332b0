"""A request's program: Python `code`, or a `command` (an argv run in the
jail, found by PATH there; docs/contract.md §9). Exactly one is given."""

from typing import Any, Dict, Optional, Sequence


def program(code: Optional[str], command: Optional[Sequence[str]]) -> Dict[str, Any]:
    """The request's "code" or "command" field; type mistakes raise here."""
    if command is None:
        if code is None:
            raise TypeError("give code (Python source) or command (an argv, e.g. ['ls', '-la'])")
        if not isinstance(code, str):
            raise TypeError(f"code must be a str, not {type(code).__name__}")
        return {"code": code}
    if code is not None:
        raise TypeError("give code or command, not both")
    if isinstance(command, (str, bytes)):
        raise TypeError("command must be a list of str (an argv), e.g. ['bash', '-c', 'ls | wc -l'], not a single string")
    argv = list(command)
    if not argv:
        raise ValueError("command must not be empty: the program first, e.g. ['ls', '-la']")
    for i, a in enumerate(argv):
        if not isinstance(a, str):
            raise TypeError(f"command[{i}] must be a str, not {type(a).__name__}")
    return {"command": argv}
