"""An unisolated fork-of-a-warm-interpreter harness, what the code
benchmarks' own harnesses do: the baseline of issue 18's throughput
benchmark (scripts/bench --throughput). No isolation of any kind.

One long-lived python3 process serves one client over its stdin and stdout,
one JSON object a line each way:

    -> {"code": "...", "timeout": 2.0}
    <- {"outcome": "ok" | "timeout" | "<exception class>" | "exit N" | "signal N",
        "exit_code": N, "stdout_bytes": N}

Per program it forks a child that runs the code with exec() in a fresh dict
as __main__, its stdout and stderr a pipe that the server drains; the child
is killed (SIGKILL) at the timeout. The exception's class comes back to the
server on a second pipe.
"""
import json, os, select, signal, sys, time, traceback


def child(code, out_w, exc_w):
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    status = 0
    try:
        exec(compile(code, "<program>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException as e:
        traceback.print_exc()
        os.write(exc_w, type(e).__name__.encode())
        status = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(status)


def run(code, timeout):
    out_r, out_w = os.pipe()
    exc_r, exc_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(out_r)
        os.close(exc_r)
        child(code, out_w, exc_w)
    os.close(out_w)
    os.close(exc_w)
    deadline = time.monotonic() + timeout
    n, timed_out = 0, False
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([out_r], [], [], left)[0]:
            os.kill(pid, signal.SIGKILL)
            timed_out = True
            break
        b = os.read(out_r, 65536)
        if not b:
            break
        n += len(b)
    _, st = os.waitpid(pid, 0)
    exc = os.read(exc_r, 256).decode() if not timed_out else ""
    os.close(out_r)
    os.close(exc_r)
    code = os.waitstatus_to_exitcode(st)
    if timed_out:
        outcome = "timeout"
    elif exc:
        outcome = exc
    elif code == 0:
        outcome = "ok"
    elif code > 0:
        outcome = f"exit {code}"
    else:
        outcome = f"signal {-code}"
    return {"outcome": outcome, "exit_code": code, "stdout_bytes": n}


def main():
    # The protocol's own streams, away from fds 0-2, which each child
    # points at its capture pipe.
    req = os.fdopen(os.dup(0), "rb")
    res = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)
    for line in iter(req.readline, b""):
        r = json.loads(line)
        res.write(json.dumps(run(r["code"], r.get("timeout", 2.0))).encode() + b"\n")


if __name__ == "__main__":
    main()
