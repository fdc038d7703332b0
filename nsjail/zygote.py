# agentjail zygote: a warm, jailed python3 that never runs request code. It
# is a jail's program (a cold jail of its own, under seccomp's ZygotePolicy)
# that imports an environment's modules ahead, then forks one program per
# warm run, into that run's jail. See nsjail/zygote_linux.go for the
# daemon's side and docs/design.md for the design and its threat model.
#
# A warm run's jail is built by the daemon as a cold one is (its pid 1 is
# agentjail's C init), but inside the zygote's user and pid namespaces.
# Ahead of its request, the daemon sends the zygote the run's uid, the
# program's socket and the run's namespaces (Z_FORK); the program's stdio
# and plan come later, on its own socket. Then:
#   the zygote   (_spawn)    enters the run's pid namespace for its next
#                            child only, forks, leaves it again; it is the
#                            program's parent: it reaps it and sends the
#                            daemon its wait status (_reap)
#   the program  (_program)  the fork, pid 2 of the run's pid namespace:
#                            becomes the run's uid (the zygote's namespace
#                            maps the jails' range, and the zygote holds
#                            CAP_SETUID, CAP_SETGID and CAP_SYS_ADMIN in it,
#                            for this only), joins the run's user, mount,
#                            network, IPC and UTS namespaces, carries out its
#                            part of the request (stdio, rlimits, the
#                            filter), joins the run's cgroup and a new cgroup
#                            namespace, drops every capability, installs the
#                            filter, and runs the request's code as
#                            `python3 -I -u` would
# The program talks to the daemon in nsjail/protocol.go's messages, on a
# socket of its own; nothing here is trusted by the daemon for more than a
# cold jail's C init stage is.
import atexit
import builtins
import ctypes
import errno
import importlib.machinery
import json
import os
import random
import resource
import select
import signal
import socket
import struct
import sys
import threading
import time

# protocol.go's message types, fds and limits (zygote_test.go checks them).
MSG_BUILD, MSG_READY, MSG_REQUEST, MSG_GO, MSG_SECCOMP, MSG_EXEC, MSG_EXIT, MSG_ERROR = 1, 2, 3, 4, 5, 6, 7, 8
MAX_MSG = 256 << 20
MAX_FDS = 8
REPORT_FD = 3
ZYGOTE_INSIDE = 100000  # where the zygote's namespace maps the jails' uid range
# The zygote's own messages on its control socket (fd 3). Z_FORK's payload
# is the run's uid in the zygote's namespace; its fds are the program's
# socket and the run's mount, pid, user, network, IPC and UTS namespaces
# (zygote_linux.go's forkProgram).
Z_READY, Z_FORK = 101, 102
Z_NS = 7  # the program's socket and the six namespaces

# plan.go's op codes (a program's plan has only STDIO, RLIMIT, CHDIR,
# SECCOMP and EXEC).
(OP_UNSHARE, OP_MOUNT, OP_BIND_RO, OP_MKDIR, OP_SYMLINK, OP_WRITE, OP_CHMOD, OP_IF_EXISTS, OP_UMOUNT, OP_RMDIR,
 OP_PIVOT_ROOT, OP_HOSTNAME, OP_DOMAINNAME, OP_LOOPBACK_UP, OP_CHDIR, OP_SECCOMP, OP_STDIO, OP_RLIMIT, OP_EXEC,
 OP_KEEP_CAPS, OP_ADOPT, OP_ATTACH, OP_LAST) = range(1, 24)

# x86_64 system calls and constants.
SYS_UNSHARE, SYS_SECCOMP, SYS_CAPSET, SYS_PRCTL, SYS_SETNS, SYS_CLOSE_RANGE = 272, 317, 126, 157, 308, 436
CLONE_NEWCGROUP, CLONE_NEWPID = 0x02000000, 0x20000000
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x04000000, 0x08000000, 0x10000000, 0x40000000
PR_SET_DUMPABLE, PR_CAPBSET_DROP = 4, 24
PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 47, 4
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV = 1, 1 << 3, 1 << 5
CLOCK_MONOTONIC = 1

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _sys(nr, *args):
    """A raw system call; OSError on failure."""
    r = _libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    if r == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def _prctl(option, arg=0):
    return _sys(SYS_PRCTL, option, arg, 0, 0, 0)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


_CapData2 = _CapData * 2


def _capset_args(caps):
    hdr = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = _CapData2()
    for c in caps:
        data[c // 32].effective |= 1 << (c % 32)
        data[c // 32].permitted |= 1 << (c % 32)
    return hdr, data


def _capset(caps):
    hdr, data = _capset_args(caps)
    _sys(SYS_CAPSET, ctypes.byref(hdr), ctypes.byref(data))


# ---- messages (protocol.go) ----

class Gone(Exception):
    """The other end of a socket closed."""


def _send(sock, typ, payload=b"", fds=()):
    hdr = struct.pack("<BI", typ, len(payload))
    if fds:
        socket.send_fds(sock, [hdr], list(fds))
        if payload:
            sock.sendall(payload)
    else:
        sock.sendall(hdr + payload)


def _recv_exact(sock, n):
    """n bytes, in one buffer that is never copied."""
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if not k:
            raise Gone()
        got += k
    return buf


def _recv(sock, max_fds=MAX_FDS):
    """One message and the fds it carried; Gone at the end of the socket.
    A message with more than max_fds fds is refused whole."""
    hdr, fds, flags, _ = socket.recv_fds(sock, 5, max_fds + 1)
    for fd in fds:
        os.set_inheritable(fd, False)
    if not hdr:
        for fd in fds:
            os.close(fd)
        raise Gone()
    if flags & socket.MSG_CTRUNC or len(fds) > max_fds:
        for fd in fds:
            os.close(fd)
        raise _Fail("read message", 0, "a message carried more than %d fds" % max_fds)
    if len(hdr) < 5:
        hdr += _recv_exact(sock, 5 - len(hdr))
    typ, n = struct.unpack("<BI", hdr)
    if n > MAX_MSG:
        raise _Fail("read message", 0, "message too large")
    return typ, _recv_exact(sock, n), fds


class _Fail(Exception):
    """A step that failed: its stage, errno and message (a failure record)."""

    def __init__(self, stage, err, msg=""):
        super().__init__(stage)
        self.stage, self.err, self.msg = stage, err, msg


def _record(stage, err, msg):
    """struct aj_record of bootstrap_linux.h, as msgError's payload."""
    return struct.pack("<c3xi120s128s", b"E", err, stage.encode()[:119], msg.encode()[:127])


def _fail(sock, e):
    """Reports a failure to the daemon (if it is still there) and exits 1."""
    if isinstance(e, _Fail):
        rec = _record(e.stage, e.err, e.msg)
    elif isinstance(e, OSError):
        rec = _record("warm run", e.errno or 0, str(e.strerror or e))
    else:
        rec = _record("warm run", 0, "%s: %s" % (type(e).__name__, e))
    try:
        _send(sock, MSG_ERROR, rec)
    except OSError:
        pass
    os._exit(1)


# ---- plans (plan.go) ----

class _Plan:
    """A reader of a plan: every read past its end, or string that is not
    one, is a malformed plan."""

    def __init__(self, b):
        self.b, self.i = memoryview(b), 0  # slices are views: a file's content is not copied

    def more(self):
        return self.i < len(self.b)

    def uint(self, size):
        if self.i + size > len(self.b):
            raise _Fail("decode plan", 0, "malformed plan: a step is cut short")
        v = int.from_bytes(self.b[self.i:self.i + size], "little")
        self.i += size
        return v

    def bytes(self):
        n = self.uint(4)
        if self.i + n + 1 > len(self.b) or self.b[self.i + n] != 0:
            raise _Fail("decode plan", 0, "malformed plan: a string is cut short or not terminated")
        v = self.b[self.i:self.i + n]
        self.i += n + 1
        return v

    def str(self, nullable=False):
        v = bytes(self.bytes())
        if b"\0" in v:
            raise _Fail("decode plan", 0, "malformed plan: a string holds a NUL byte")
        return None if nullable and not v else v.decode("utf-8", "surrogateescape")


class _State:
    """What the program's plan leaves for its start."""
    filter = None
    report = collect = False
    argv = env = None


def _walk(st, plan, fds, dry):
    """Carries out a program's plan (plan.go's programPlan), or with dry
    only reads it through: _carry_out does that first, so that a malformed
    plan is refused before any of its steps runs. Every step a program's
    plan does not have is refused: the jail's file system is its init's."""
    r = _Plan(plan)
    filters = execs = False
    while r.more():
        op = r.uint(1)
        stage = r.str()
        try:
            if op == OP_CHDIR:
                a = r.str()
                if not dry:
                    os.chdir(a)
            elif op == OP_SECCOMP:
                f = r.bytes()
                if filters:
                    raise _Fail(stage, 0, "malformed plan: a second filter")
                filters = True
                if not f or len(f) % 8 or len(f) // 8 > 4096 or f[-8:-6] != b"\x06\x00":
                    raise _Fail(stage, 0, "malformed plan: no usable filter")
                if not dry:
                    st.filter = bytes(f)
            elif op == OP_STDIO:
                n = r.uint(4)
                if n != len(fds):
                    raise _Fail(stage, 0, "malformed plan: wrong number of stdio fds")
                if not dry:
                    for i, fd in enumerate(fds):
                        os.dup2(fd, i, inheritable=True)
                        os.close(fd)
            elif op == OP_RLIMIT:
                res, soft, hard = r.uint(4), r.uint(8), r.uint(8)
                if not dry:
                    resource.setrlimit(res, (soft, hard))
            elif op == OP_EXEC:
                if execs:
                    raise _Fail(stage, 0, "malformed plan: a second program")
                execs = True
                report, collect = r.uint(4), r.uint(4)
                lists = []
                for i in range(2):
                    n = r.uint(4)
                    if n > len(r.b) - r.i or (i == 0 and n == 0):
                        raise _Fail(stage, 0, "malformed plan: a list is longer than the plan, or argv is empty")
                    lists.append([r.str() for _ in range(n)])
                if not dry:
                    st.report, st.collect, st.argv, st.env = bool(report), bool(collect), lists[0], lists[1]
            else:
                raise _Fail("decode plan", 0, "malformed plan: a step a program's plan does not have")
        except OSError as e:
            raise _Fail(stage, e.errno or 0, "")
    if not filters or not execs:
        raise _Fail("decode plan", 0, "malformed plan: no filter or no program")


# A filter of one instruction, RET ALLOW: _warm_up's, never installed.
_DRY_FILTER = b"\x06\x00\x00\x00\x00\x00\xff\x7f"


def _dummy_plan():
    """A program's plan with each step it may have, for _warm_up."""
    def s(x):
        return struct.pack("<I", len(x)) + x + b"\0"
    return b"".join((
        bytes([OP_STDIO]) + s(b"stdio") + struct.pack("<I", 0),
        bytes([OP_RLIMIT]) + s(b"rlimit") + struct.pack("<IQQ", 7, 1024, 1024),
        bytes([OP_CHDIR]) + s(b"chdir") + s(b"/"),
        bytes([OP_SECCOMP]) + s(b"seccomp") + s(_DRY_FILTER),
        bytes([OP_EXEC]) + s(b"exec") + struct.pack("<III", 1, 1, 1) + s(b"/code/x.py") + struct.pack("<I", 1) + s(b"A=1"),
    ))


_DUMMY_PLAN = _dummy_plan()


def _warm_up():
    """Runs the first steps of the request's path once in the fork, with
    nothing of a request, before it says it is ready: ahead of the request
    for a run of the pool (a run forked on a request's path, or a
    session's, does the same work, just not ahead). A fork's first run of
    a function writes to the pages of the objects it uses (reference
    counts), and each first write copies a page: some hundred copies,
    about 5 us each on a virtual machine, leave the request's path
    (BENCHMARKS.md). Of the steps, the program sees only the reseeding:
    its random generators are seeded here, from the kernel, and by nothing
    after; the plan is walked dry, and no other call is made."""
    _walk(_State(), _DUMMY_PLAN, [], True)
    _capset_args(())
    _filter_prog(_DRY_FILTER)
    _MMMap(*range(11), None, 0, 0xFFFFFFFF)
    compile("pass", "/code/main.py", "exec", dont_inherit=True)
    # The fork's random state is its own from here on: nothing else runs in
    # it before its request.
    _reseed()


def _carry_out(st, plan, fds):
    _walk(st, plan, fds, True)
    _walk(st, plan, fds, False)


# ---- the zygote ----

_entry = None  # the environment's warm entry module, when it has one


def _below_pid_two():
    """The zygote's process is pid 2 of its jail, as every run's program is
    of its own: a library that notices a fork by a change of pid (tempfile,
    for one) would never see one, and every run would repeat what it made
    in the zygote. So the zygote is a child of that process (pid 3 or
    more), which waits for it and ends as it ends."""
    if os.getpid() != 2:
        return
    pid = os.fork()
    if pid == 0:
        return
    os.close(REPORT_FD)  # the control socket is the zygote's alone: its end is the daemon's news
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, _: os.kill(pid, s))
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            os._exit(1)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


def main():
    _below_pid_two()
    global _ctl, _own_pid_ns
    # Where each fork returns to, once its child is born in a run's pid
    # namespace.
    _own_pid_ns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    global _null
    _null = os.open("/dev/null", os.O_RDWR | os.O_CLOEXEC)
    # The programs' ends are reaped by the loop below, woken by SIGCHLD
    # through a pipe (and once a second, should a wake-up be missed), not
    # in a handler: a handler runs only where python checks for signals.
    global _wake
    _wake = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(_wake[1])
    signal.signal(signal.SIGCHLD, lambda *_: None)
    cfg = json.loads(sys.argv[1])
    ctl = _ctl = socket.socket(fileno=REPORT_FD)
    os.set_inheritable(REPORT_FD, False)
    info = {"python": sys.version.split()[0], "preload": {}}
    for name in cfg.get("preload") or []:
        try:
            __import__(name)
            info["preload"][name] = ""
        except BaseException as e:
            info["preload"][name] = "%s: %s" % (type(e).__name__, e)
    if cfg.get("entry"):
        global _entry
        try:
            _entry = _load(cfg["entry"])
            if hasattr(_entry, "zygote"):
                _entry.zygote()
        except BaseException as e:
            info["entry"] = "%s: %s" % (type(e).__name__, e)
    # What python does once per process on a first call is done here, once
    # for every run: compile() builds the ast module's types on its first
    # call (about 3 ms of CPU on this project's host, more than all the
    # rest of a warm `pass`).
    compile("pass", "<zygote>", "exec", dont_inherit=True)
    _read_mm_layout()
    try:
        _quiesce()
    except SystemExit as e:  # the daemon says why this zygote cannot serve
        info["error"] = str(e)
        _send(ctl, Z_READY, json.dumps(info).encode())
        os._exit(1)
    # Every object there is now stays out of the collector's walks, so
    # that a fork's collections do not write to (and copy) the pages of
    # the zygote's objects: with numpy loaded, hundreds of pages a run.
    import gc
    gc.collect()
    gc.freeze()
    _send(ctl, Z_READY, json.dumps(info).encode())
    while True:
        ready = select.select([ctl, _wake[0]], [], [], 1.0)[0]
        if _wake[0] in ready:
            try:
                os.read(_wake[0], 4096)
            except BlockingIOError:
                pass
        _reap()
        if ctl not in ready:
            continue
        try:
            typ, payload, fds = _recv(ctl, Z_NS)
        except Gone:
            os._exit(0)  # the daemon dropped this zygote
        except _Fail:
            # Refused after its header (too large, too many fds): its
            # payload is still in the socket, and would be read as the
            # next header. The daemon replaces a zygote that ended.
            os._exit(1)
        if typ != Z_FORK:
            for fd in fds:
                os.close(fd)
            continue
        _spawn(payload, fds)


_wake = None        # the pipe SIGCHLD wakes the zygote's loop through
_ctl = None         # the zygote's control socket
_own_pid_ns = -1    # the zygote's own pid namespace
_null = -1          # /dev/null: what a fork holds on fds 0 to 3 until its stdio comes
REAPS = 64          # programs reaped a turn of the loop, at most: forks are served between turns
_runs = {}          # pid of each program -> its socket, on which its end is sent


def _reap():
    """The zygote is its programs' parent: each one's wait status goes to
    the daemon on the program's socket (msgExit), as a cold jail's init
    sends its program's. At most REAPS a call: a program cannot make
    other children of the zygote (the run's filter forbids CLONE_PARENT),
    but forks are served between turns whatever happens."""
    for _ in range(REAPS):
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        sock = _runs.pop(pid, None)
        if sock is not None:
            try:
                _send(sock, MSG_EXIT, struct.pack("<i", status))
            except OSError:
                pass  # the daemon dropped the run
            sock.close()


def _spawn(payload, fds):
    """Forks the program of one run into the run's namespaces (Z_FORK).
    The uid is one of the jails' range, mapped from ZYGOTE_INSIDE up
    (zygote_linux.go's zygoteUID): never this zygote's own (1000) nor
    anything below; anything else is refused."""
    run = None
    try:
        if not fds:
            return
        run = socket.socket(fileno=fds[0])
        if len(fds) != Z_NS or len(payload) != 4 or struct.unpack("<I", payload)[0] < ZYGOTE_INSIDE:
            raise _Fail("fork", 0, "a fork of another uid, or with other fds")
        uid = struct.unpack("<I", payload)[0]
    except BaseException as e:
        if run is not None:
            _answer(run, e)
            run.close()
        for fd in fds[1:]:
            os.close(fd)
        return
    try:
        # Only this process's next child is born in the run's pid
        # namespace (as pid 2: its init is pid 1); this process stays in
        # its own.
        _sys(SYS_SETNS, fds[2], CLONE_NEWPID)
        try:
            pid = os.fork()
            if pid == 0:
                _program(run, fds, uid)
        finally:
            _sys(SYS_SETNS, _own_pid_ns, CLONE_NEWPID)
        _runs[pid] = run
        run = None
    except OSError as e:
        if run is not None:
            _answer(run, _Fail("fork the program", e.errno or 0, str(e.strerror or e)))
            run.close()
    finally:
        # (The loop reaps: no program is reaped before it is in _runs.)
        for fd in fds[1:]:
            os.close(fd)


def _answer(sock, e):
    """Tells the daemon why a fork failed (msgError), if it still listens."""
    try:
        _send(sock, MSG_ERROR, _record(e.stage, e.err, e.msg) if isinstance(e, _Fail)
              else _record("fork", 0, "%s: %s" % (type(e).__name__, e)))
    except OSError:
        pass


def _load(path):
    import types
    mod = types.ModuleType("agentjail_warm")
    mod.__file__ = path
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec", dont_inherit=True)
    exec(code, mod.__dict__)
    return mod


def _quiesce():
    """What the zygote's imports left that a fork must not share: a thread
    (a fork copies only the forking one, and a library's pool would be
    missing in every run) is an error the daemon reports."""
    if threading.active_count() > 1:
        raise SystemExit("agentjail zygote: the preloaded modules started threads: %s"
                         % ", ".join(t.name for t in threading.enumerate()))
    # A writable shared mapping (mmap(MAP_SHARED), a shared memory
    # segment) would be one memory that every run writes and reads.
    with open("/proc/self/maps") as f:
        shared = [line.split(None, 5)[-1].strip() or "(anonymous)" for line in f
                  if line.split()[1][1] == "w" and line.split()[1][3] == "s"]
    if shared:
        raise SystemExit("agentjail zygote: the preloaded modules (or the entry) left a writable shared mapping, "
                         "which every run would share: %s" % ", ".join(shared))


# ---- one warm run's program ----

def _program(run, fds, uid):
    """The fork, pid 2 of the run's pid namespace: it becomes the run's own,
    ahead of the request, then takes the request's part and runs the
    request's code. Everything up to the filter is the zygote's code, with
    the zygote's capabilities (in the run's user namespace once it joined
    it); the request's code runs with none."""
    try:
        # Nothing of the zygote's stays, from the fork on: its output
        # (fds 0 to 2) and its control socket (fd 3; /dev/null holds the
        # four until stdio comes, so that no fd received later takes one
        # of their numbers), the other runs' sockets, its wake-up pipe,
        # its pid namespace.
        signal.set_wakeup_fd(-1)
        for fd in (0, 1, 2):
            os.dup2(_null, fd)
        os.dup2(_null, REPORT_FD, inheritable=False)
        _ctl.detach()
        for s in _runs.values():
            s.close()
        _runs.clear()
        for fd in (_wake[0], _wake[1], _own_pid_ns, _null):
            os.close(fd)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        # A session of its own: no process group or session is shared with
        # the zygote (kill(0, ...) reaches only the program's own).
        os.setsid()
        # The run's uid and gid, as the zygote's namespace maps them: the
        # run's user namespace maps them as 1000. That namespace is owned
        # by this uid (the run's bootstrap made it as this uid, in the
        # zygote's namespace), which is why this process, with no
        # capability left after setresuid, may enter it: the kernel gives
        # a namespace's owner every capability in it. So may any process
        # of this uid in the zygote's namespace: no other one exists (each
        # run has its own uid, and a run's processes are in the run's
        # namespace, not the zygote's).
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        ns = fds[1:Z_NS]  # mount, pid, user, net, ipc, uts
        # The user namespace first: the others are its. Each with its
        # type: the kernel refuses a namespace of another type there.
        for fd, t in ((ns[2], CLONE_NEWUSER), (ns[0], CLONE_NEWNS), (ns[3], CLONE_NEWNET),
                      (ns[4], CLONE_NEWIPC), (ns[5], CLONE_NEWUTS)):
            _sys(SYS_SETNS, fd, t)
        for fd in ns:
            os.close(fd)
        # The bounding set goes now, ahead of the request: it needs
        # CAP_SETPCAP, which the run's user namespace gives this process
        # until _start_program drops the rest, and nothing before that
        # needs it (it limits what an exec may gain, not what this
        # process holds). Some 40 calls off the request's path. Joining
        # or making a user namespace fills the set again: nothing of the
        # kind may come after this (TestWarmProgramAheadHasNoBoundingSet).
        c = 0
        while True:
            try:
                _prctl(PR_CAPBSET_DROP, c)
            except OSError as e:
                if e.errno == errno.EINVAL:
                    break
                raise _Fail("drop capability %d from the bounding set" % c, e.errno)
            c += 1
        _warm_up()
        # Ready: the daemon knows this process by this message's
        # credentials (its pid), and sends the request when it comes.
        _send(run, MSG_READY)
        try:
            typ, plan, stdio = _recv(run)
        except Gone:
            os._exit(0)  # the daemon dropped the run before its request
        if typ != MSG_REQUEST:
            raise _Fail("read request", 0, "unexpected message instead of the request")
        st = _State()
        _carry_out(st, plan, stdio)
        del plan
        # Go comes once the run's init has the request's files: with the
        # group's tasks files on cgroup v1; on v2 the daemon moved this
        # process into the group by its pid.
        typ, _, join = _recv(run)
        if typ != MSG_GO:
            raise _Fail("read go", 0, "unexpected message instead of go")
        _start_program(run, st, join)
    except BaseException as e:
        _fail(run, e)


def _start_program(run, st, join):
    """init_linux.c's aj_start_program for a fork: join, cgroup namespace,
    capabilities, seccomp, then the request's code in this process."""
    for fd in join:
        try:
            os.write(fd, b"0")
        except OSError as e:
            raise _Fail("join cgroup", e.errno or 0)
        finally:
            os.close(fd)
    try:
        _sys(SYS_UNSHARE, CLONE_NEWCGROUP)
    except OSError as e:
        raise _Fail("unshare cgroup namespace", e.errno)
    # The bounding set went ahead (_program); now the rest.
    _sys(SYS_PRCTL, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    _capset(())
    workspace = os.open("/workspace", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) if st.collect else -1
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    listener = _install_filter(st.filter)
    _send(run, MSG_SECCOMP, b"", [listener] + ([workspace] if workspace >= 0 else []))
    os.close(listener)
    if workspace >= 0:
        os.close(workspace)
    _send(run, MSG_EXEC, struct.pack("<q", time.clock_gettime_ns(CLOCK_MONOTONIC)))
    _run_program(run, st)


class _MMMap(ctypes.Structure):
    """struct prctl_mm_map (linux/prctl.h)."""
    _fields_ = [(n, ctypes.c_uint64) for n in (
        "start_code", "end_code", "start_data", "end_data", "start_brk", "brk", "start_stack",
        "arg_start", "arg_end", "env_start", "env_end")] + [
        ("auxv", ctypes.c_void_p), ("auxv_size", ctypes.c_uint32), ("exe_fd", ctypes.c_uint32)]


_title = None  # the strings _retitle points the kernel at: alive as long as the process


def _retitle(argv, env):
    """Makes /proc/self/cmdline and /proc/self/environ say argv and env
    (they would show the zygote's own, from its exec): the kernel reads
    them from the memory this process gives it (PR_SET_MM_MAP, allowed
    without privilege). The rest of the map is the zygote's (_mm_layout),
    which every fork shares."""
    global _title
    a = b"".join(x.encode() + b"\0" for x in argv)
    e = b"".join(x.encode() + b"\0" for x in env)
    _title = ctypes.create_string_buffer(a + e, len(a) + len(e))
    base = ctypes.addressof(_title)
    code0, code1, data0, data1, brk0, stack = _mm_layout
    m = _MMMap(code0, code1, data0, data1, brk0, _libc.sbrk(0), stack,
               base, base + len(a), base + len(a), base + len(a) + len(e), None, 0, 0xFFFFFFFF)
    _sys(SYS_PRCTL, 35, 14, ctypes.byref(m), ctypes.sizeof(m), 0)  # PR_SET_MM, PR_SET_MM_MAP


_mm_layout = None  # start_code, end_code, start_data, end_data, start_brk, start_stack


def _read_mm_layout():
    """The zygote's memory layout from /proc/self/stat: a fork's is the
    same, so each run's _retitle reads nothing."""
    global _mm_layout
    with open("/proc/self/stat") as f:
        st = f.read().rsplit(")", 1)[1].split()
    field = lambda n: int(st[n - 3])  # proc(5)'s numbers, from 1, after comm
    _mm_layout = (field(26), field(27), field(45), field(46), field(47), field(28))
    _libc.sbrk.restype = ctypes.c_void_p


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _filter_prog(f):
    buf = ctypes.create_string_buffer(f, len(f))
    return _SockFprog(len(f) // 8, ctypes.addressof(buf)), buf


def _install_filter(f):
    prog, buf = _filter_prog(f)
    try:
        return _sys(SYS_SECCOMP, SECCOMP_SET_MODE_FILTER,
                    SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, ctypes.byref(prog))
    except OSError as e:
        if e.errno != errno.EINVAL:
            raise _Fail("seccomp: seccomp(SECCOMP_SET_MODE_FILTER, NEW_LISTENER)", e.errno)
    try:
        return _sys(SYS_SECCOMP, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, ctypes.byref(prog))
    except OSError as e:
        raise _Fail("seccomp: seccomp(SECCOMP_SET_MODE_FILTER, NEW_LISTENER)", e.errno)


def _run_program(run, st):
    """The program: this warm interpreter, made to look like a fresh
    `python3 -I -u PROGRAM`, runs the request's code. Nothing of the
    zygote's or the init's that the program could use stays: every fd but
    0 to 3 is closed, every signal is back to python's own dispositions."""
    try:
        run.detach()  # the fd goes with close_range below; the object must not close another one later
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _sys(SYS_CLOSE_RANGE, REPORT_FD + 1 if st.report else REPORT_FD, 0xFFFFFFFF, 0)
        # A program is dumpable, as one that python3's exec started is:
        # its own /proc files are its user's. Only now: no fd of the
        # set-up is left to read through them.
        _prctl(PR_SET_DUMPABLE, 1)
        # Only what differs from the zygote's environment changes: each
        # change is a libc call and dict work.
        env = dict(kv.partition("=")[::2] for kv in st.env)
        for k in [k for k in os.environ if k not in env]:
            del os.environ[k]
        for k, v in env.items():
            if os.environ.get(k) != v:
                os.environ[k] = v
        _retitle(st.argv, st.env)
        path = st.argv[-1]
        sys.argv = [path]
        sys.orig_argv = list(st.argv)
    except BaseException as e:  # the program must not start half set up
        os.write(2, ("agentjail: the warm run could not start: %s\n" % e).encode())
        os._exit(125)
    _exit_like_python(path)


def _reseed():
    """A fork shares its parent's random state: every generator a program
    may use without a seed of its own starts afresh (os.fork has reseeded
    random already; secrets, uuid4 and os.urandom read the kernel's)."""
    random.seed()
    np = sys.modules.get("numpy.random")
    if np is not None:
        try:
            np.seed()
        except Exception:
            pass


def _exit_like_python(path):
    """Runs the program as `python3 PROGRAM` runs its __main__, and ends
    this process as python's own exit would: threads joined, atexit
    handlers run, output flushed, the same status."""
    code, sigint = 0, False
    try:
        if _entry is not None and hasattr(_entry, "main"):
            _entry.main()
        else:
            _main_module(path)
    except SystemExit as e:
        code = _exit_code(e)
    except BaseException as e:
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
            tb = tb.tb_next
        try:
            sys.excepthook(type(e), e, tb)
        except BaseException:
            pass
        code, sigint = 1, isinstance(e, KeyboardInterrupt)
    try:
        threading._shutdown()
    except BaseException:
        pass
    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except BaseException:
            pass
    if sigint:  # as python does: it dies of SIGINT
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)


def _exit_code(e):
    c = e.code
    if c is None:
        return 0
    if isinstance(c, int):
        return c & 0xff
    try:
        sys.stderr.write(str(c) + "\n")
    except BaseException:
        pass
    return 1


def _main_module(path):
    mod = type(sys)("__main__")
    mod.__dict__.update(__loader__=importlib.machinery.SourceFileLoader("__main__", path), __annotations__={},
                        __builtins__=builtins, __file__=path, __cached__=None)
    sys.modules["__main__"] = mod
    with open(path, "rb") as f:
        src = f.read()
    exec(compile(src, path, "exec", dont_inherit=True), mod.__dict__)


if __name__ == "__main__":
    main()
