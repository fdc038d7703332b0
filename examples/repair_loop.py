#!/usr/bin/env python3
"""An agent-style repair loop on agentjail, with the LLM replaced by a script.

Each round submits a candidate `median` function with its test cases to the
daemon, prints the verdicts and the daemon's `feedback` (the sentences an
LLM would read), and asks for the next candidate. The candidates are
scripted: a buggy one, a half fix, a fix. Exits 0 once every test passes.

    python3 examples/repair_loop.py [--socket PATH]

Needs a running daemon (`agentjail serve`; the socket defaults to
$AGENTJAIL_SOCKET, else /run/agentjail/agentjail.sock) and the client
(`pip install clients/python`, or run from a checkout: this script finds it).
"""

import argparse
import os
import sys

try:
    import agentjail
except ImportError:  # run from a checkout without installing the client
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients", "python"))
    import agentjail

from agentjail import Case, Limits, Tests

TESTS = Tests("median", [
    Case("odd", [[3, 1, 2]], expected=2),
    Case("even", [[4, 1, 3, 2]], expected=2.5),
    Case("single", [[7]], expected=7),
    Case("empty", [[]], expected_exception="ValueError"),
    Case("floats", [[0.5, 0.25]], expected_type="float"),
])

# What a model might answer, round after round.
CANDIDATES = [
    # 1: takes the upper middle of an even list, and an empty list raises IndexError
    """\
def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]
""",
    # 2: averages the two middles, still IndexError on an empty list
    """\
def median(xs):
    xs = sorted(xs)
    mid = len(xs) // 2
    if len(xs) % 2:
        return xs[mid]
    return (xs[mid - 1] + xs[mid]) / 2
""",
    # 3: the fix
    """\
def median(xs):
    if not xs:
        raise ValueError("median() of an empty list")
    xs = sorted(xs)
    mid = len(xs) // 2
    if len(xs) % 2:
        return xs[mid]
    return (xs[mid - 1] + xs[mid]) / 2
""",
]


def propose(round_no, code, feedback):
    """Stands in for the model: given the last code and the feedback on it,
    return the next candidate (None when it has no more ideas)."""
    return CANDIDATES[round_no] if round_no < len(CANDIDATES) else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--socket", help="the daemon's socket (default: $AGENTJAIL_SOCKET or %s)"
                    % agentjail.DEFAULT_SOCKET)
    ap.add_argument("--rounds", type=int, default=5, help="give up after this many rounds")
    args = ap.parse_args()

    client = agentjail.Client(args.socket, timeout=60)
    code, feedback = None, []
    for round_no in range(args.rounds):
        code = propose(round_no, code, feedback)
        if code is None:
            break
        try:
            r = client.run(code, tests=TESTS, limits=Limits(wall_time_ms=5000, memory_bytes=64 << 20))
        except agentjail.AgentjailError as e:
            print(f"agentjail: {e}", file=sys.stderr)
            return 2
        t = r.tests
        passed = f"{t.passed}/{t.total} tests pass" if t is not None else "no test verdicts"
        print(f"round {round_no + 1}: {r.status}, {passed}, {r.wall_time_ms:.0f} ms")
        for case in (t.results if t is not None else []):
            mark = "pass" if case.passed else "FAIL"
            print(f"  {mark} {case.name}: {case.detail}")
        feedback = r.feedback
        for sentence in feedback:
            print(f"  feedback: {sentence}")
        if r.status == "ok" and t is not None and t.total == len(TESTS.cases) and t.all_passed:
            print(f"all tests pass after {round_no + 1} round(s)")
            return 0
    print("gave up: the tests still fail", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
