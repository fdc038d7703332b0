#!/usr/bin/env python3
"""A notebook-style analysis in an agentjail session, with the LLM replaced
by a script.

An agent that analyses data works in steps — load the file, clean it,
compute, report — and each step expects the variables of the one before.
A session keeps one live interpreter in its jail for all of them: each
step is a call, its trailing expression comes back as `value` (as a
notebook shows Out[n]), an exception ends the step but not the session,
and the session is deleted when the `with` block ends, however it ends.

    python3 examples/session_steps.py [--socket PATH] [--async]

Needs a running daemon (`agentjail serve`; the socket defaults to
$AGENTJAIL_SOCKET, else /run/agentjail/agentjail.sock) and the client
(`pip install clients/python`, or run from a checkout: this script finds it).
"""

import argparse
import asyncio
import os
import sys

try:
    import agentjail
except ImportError:  # run from a checkout without installing the client
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients", "python"))
    import agentjail

DATA = "a,b\n1,2\n2,4\n3,\n4,6\n"

# What a model might send, step after step. The third step has a mistake
# (a name no step defined); the next one recovers, with everything before
# still there.
STEPS = [
    ("load", "import csv\nwith open('data.csv', newline='') as f:\n    rows = list(csv.DictReader(f))\nlen(rows)"),
    ("clean", "rows = [r for r in rows if r['b']]\nb = [float(r['b']) for r in rows]\nlen(b)"),
    ("median", "med = median(b)"),
    ("mean", "mean = sum(b) / len(b)\nmean"),
    ("report", "with open('report.txt', 'w') as f:\n    f.write(f'rows: {len(rows)}, mean of b: {mean}\\n')"),
]


def show(name, r):
    if r.status == "ok":
        print(f"step {name}: ok" + (f", value {r.value}" if r.value is not None else ""))
    else:
        print(f"step {name}: {r.status}: {r.exception or r.kill_reason}")
        for sentence in r.feedback:
            print(f"  feedback: {sentence}")
    print(f"  session: {r.session.calls} call(s), alive={r.session.alive}")


def report(r):
    print(f"report.txt: {r.file('report.txt').read_text().strip()}")


def main_sync(socket):
    client = agentjail.Client(socket)
    with client.session(files={"data.csv": DATA}, idle_timeout_ms=60000) as s:
        print(f"session {s.id} ({s.environment}, {s.start} start)")
        for name, code in STEPS:
            r = s.run(code, collect=["report.txt"] if name == "report" else None)
            show(name, r)
        report(r)
        print(f"calls: {s.info().calls}")
    print("session deleted")


async def main_async(socket):
    client = agentjail.AsyncClient(socket)
    async with client.session(files={"data.csv": DATA}, idle_timeout_ms=60000) as s:
        print(f"session {s.id} ({s.environment}, {s.start} start)")
        for name, code in STEPS:
            r = await s.run(code, collect=["report.txt"] if name == "report" else None)
            show(name, r)
        report(r)
        print(f"calls: {(await s.info()).calls}")
    print("session deleted")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--socket", help="the daemon's socket (default: $AGENTJAIL_SOCKET, else the system one)")
    ap.add_argument("--async", dest="use_async", action="store_true", help="use the asyncio client")
    args = ap.parse_args()
    try:
        if args.use_async:
            asyncio.run(main_async(args.socket))
        else:
            main_sync(args.socket)
    except agentjail.AgentjailError as e:
        print(f"agentjail: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
