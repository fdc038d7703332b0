# agentjail zygote: a warm, jailed python3 that never runs request code. It
# is a jail's program (a cold jail of its own, under seccomp's ZygotePolicy)
# that imports an environment's modules ahead, then forks one warm run per
# request of the daemon. See nsjail/zygote_linux.go for the daemon's side and
# docs/design.md for the design and its threat model.
#
# Three processes come of each fork, each in a function below:
#   the fork        (_fork)   a child of the zygote: becomes the run's uid (the
#                             zygote's namespace maps every uid of the range,
#                             and the zygote holds CAP_SETUID and CAP_SETGID in
#                             it, for this only), makes the run's user namespace,
#                             its own, and maps itself as 1000 there; the run's
#                             other namespaces; forks the run's init, exits
#   the run's init  (_init)   pid 1 of the run's pid namespace: carries out the
#                             daemon's plans (the run's /proc, scratch, /code,
#                             its request), joins its cgroup, drops every
#                             capability, installs the run's seccomp filter,
#                             forks the program, reaps, reports its end
#   the program     (_program) a fork of the run's init: the request's code, in
#                             this warm interpreter, as `python3 -I -u` would
#                             run it
# The run's init talks to the daemon in nsjail/protocol.go's messages, as a
# cold jail's C init stage does (init_linux.c): the same plans, the same
# conversation from msgBuild on. Nothing here is trusted by the daemon for
# more than that init stage is.
import atexit
import builtins
import ctypes
import errno
import fcntl
import importlib.machinery
import json
import os
import random
import resource
import signal
import socket
import struct
import sys
import threading
import time

# protocol.go's message types, fds and limits (zygote_test.go checks them).
MSG_BUILD, MSG_READY, MSG_REQUEST, MSG_GO, MSG_SECCOMP, MSG_EXEC, MSG_EXIT, MSG_ERROR = 1, 2, 3, 4, 5, 6, 7, 8
MAX_MSG = 256 << 20
MAX_FDS = 4
REPORT_FD = 3
JAIL_ID = 1000
ZYGOTE_INSIDE = 100000  # where the zygote's namespace maps the jails' uid range
# The zygote's own messages on its control socket (fd 3): Z_FORK carries
# the run's socket and, as payload, the run's uid in the zygote's namespace.
Z_READY, Z_FORK = 101, 102

# plan.go's op codes.
(OP_UNSHARE, OP_MOUNT, OP_BIND_RO, OP_MKDIR, OP_SYMLINK, OP_WRITE, OP_CHMOD, OP_IF_EXISTS, OP_UMOUNT, OP_RMDIR,
 OP_PIVOT_ROOT, OP_HOSTNAME, OP_DOMAINNAME, OP_LOOPBACK_UP, OP_CHDIR, OP_SECCOMP, OP_STDIO, OP_RLIMIT, OP_EXEC,
 OP_KEEP_CAPS, OP_LAST) = range(1, 22)  # OP_KEEP_CAPS: a zygote's jail only, never a run's (an unknown step here)

# x86_64 system calls and constants.
SYS_UMOUNT2, SYS_MOUNT, SYS_UNSHARE, SYS_SECCOMP, SYS_CAPSET, SYS_PRCTL = 166, 165, 272, 317, 126, 157
SYS_CLOSE_RANGE, SYS_OPENAT2, SYS_SETDOMAINNAME, SYS_PIVOT_ROOT = 436, 437, 171, 155
CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC = 0x20000, 0x02000000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 4096
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_KEEPCAPS, PR_CAPBSET_DROP = 1, 4, 8, 24
PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 36, 38, 47, 4
CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_SETPCAP = 12, 21, 8
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV = 1, 1 << 3, 1 << 5
RESOLVE_NO_XDEV, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS, RESOLVE_BENEATH = 1, 2, 4, 8
SIOCSIFFLAGS, IFF_UP, IFF_LOOPBACK, IFF_RUNNING = 0x8914, 0x1, 0x8, 0x40
WALL = 0x40000000
CLOCK_MONOTONIC = 1

# The signals the run's init forwards to the program (init_linux.c's).
FORWARDED = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2,
             signal.SIGALRM, signal.SIGWINCH)

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


def _cstr(s):
    return None if s is None else ctypes.c_char_p(s.encode() if isinstance(s, str) else s)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _capset(caps):
    hdr = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    for c in caps:
        data[c // 32].effective |= 1 << (c % 32)
        data[c // 32].permitted |= 1 << (c % 32)
    _sys(SYS_CAPSET, ctypes.byref(hdr), ctypes.byref(data))


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _open_beneath(dirfd, rel, flags, mode=0):
    # No "..", no symbolic or magic link, no other mount (init_linux.c's
    # aj_open_beneath): the paths were checked by Spec.Validate; this is the
    # second line.
    how = _OpenHow(flags | os.O_CLOEXEC, mode if flags & os.O_CREAT else 0,
                   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)
    for _ in range(16):
        try:
            return _sys(SYS_OPENAT2, dirfd, rel.encode(), ctypes.byref(how), ctypes.sizeof(how))
        except OSError as e:
            if e.errno not in (errno.EINTR, errno.EAGAIN):
                raise
    raise OSError(errno.EAGAIN, "openat2 kept being raced")


def _write_beneath(dirfd, rel, content, mode):
    """Writes one file below the directory fd dirfd, making the directories
    on its way one level at a time, each beneath dirfd."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    try:
        fd = _open_beneath(dirfd, rel, flags, mode)
    except FileNotFoundError:
        parts = rel.split("/")[:-1]
        for i in range(len(parts)):
            parent = "/".join(parts[:i])
            pfd = _open_beneath(dirfd, parent, os.O_PATH | os.O_DIRECTORY) if parent else os.dup(dirfd)
            try:
                os.mkdir(parts[i], 0o755, dir_fd=pfd)
            except FileExistsError:
                pass
            finally:
                os.close(pfd)
        fd = _open_beneath(dirfd, rel, flags, mode)
    try:
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _mount(source, target, fstype, flags, data):
    _sys(SYS_MOUNT, _cstr(source), _cstr(target), _cstr(fstype), flags, _cstr(data))


def _locked_flags(path):
    """The flags of the mount at path that a remount inside a user namespace
    must repeat (the kernel locks them)."""
    f = os.statvfs(path).f_flag
    out = 0
    for st, ms in ((os.ST_NOEXEC, MS_NOEXEC), (os.ST_NOATIME, MS_NOATIME), (os.ST_NODIRATIME, MS_NODIRATIME),
                   (os.ST_RELATIME, MS_RELATIME), (os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV)):
        if f & st:
            out |= ms
    return out


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
    """n bytes, in one buffer that is never copied: a request's plan holds
    its files, which the run's set-up must not hold twice."""
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if not k:
            raise Gone()
        got += k
    return buf


def _recv(sock):
    """One message and the fds it carried; Gone at the end of the socket.
    A message with more than MAX_FDS fds is refused whole."""
    hdr, fds, flags, _ = socket.recv_fds(sock, 5, MAX_FDS + 1)
    for fd in fds:
        os.set_inheritable(fd, False)
    if not hdr:
        for fd in fds:
            os.close(fd)
        raise Gone()
    if flags & socket.MSG_CTRUNC or len(fds) > MAX_FDS:
        for fd in fds:
            os.close(fd)
        raise _Fail("read message", 0, "a message carried more than %d fds" % MAX_FDS)
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
    """What the plans leave for the program's start."""
    filter = None
    report = collect = False
    argv = env = None


def _walk(st, plan, fds, dry):
    """Carries out one plan (init_linux.c's aj_walk, step for step), or with
    dry only reads it through: _carry_out does that first, so that a
    malformed plan is refused before any of its steps runs."""
    r = _Plan(plan)
    skip, cond = 0, False
    filters, execs = st.filter is not None, st.argv is not None
    wdir = wdir_path = None
    try:
        while r.more():
            op = r.uint(1)
            was_cond, cond = cond, op == OP_IF_EXISTS
            if cond and was_cond:
                raise _Fail("decode plan", 0, "malformed plan: a condition on a condition")
            stage = r.str()
            act = not dry and not skip
            try:
                if op == OP_UNSHARE:
                    flags = r.uint(4)
                    if act:
                        _sys(SYS_UNSHARE, flags)
                elif op == OP_MOUNT:
                    a, b, c, flags, d = r.str(True), r.str(), r.str(True), r.uint(8), r.str(True)
                    if act:
                        _mount(a, b, c, flags, d)
                elif op == OP_BIND_RO:
                    a, b, extra, cleared = r.str(), r.str(), r.uint(8), r.uint(8)
                    if act:
                        _mount(a, b, None, MS_BIND, None)
                        _mount(None, b, None, (MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | extra
                                               | _locked_flags(b)) & ~cleared, None)
                elif op == OP_MKDIR:
                    a, mode, parents = r.str(), r.uint(4), r.uint(4)
                    if act:
                        if parents:
                            os.makedirs(a, mode, exist_ok=True)
                        else:
                            os.mkdir(a, mode)
                elif op == OP_SYMLINK:
                    a, b = r.str(), r.str()
                    if act:
                        os.symlink(a, b)
                elif op == OP_WRITE:
                    a, b, mode, content = r.str(), r.str(), r.uint(4), r.bytes()
                    if act:
                        if wdir_path != a:
                            if wdir is not None:
                                os.close(wdir)
                            wdir, wdir_path = os.open(a, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC), a
                        _write_beneath(wdir, b, content, mode)
                elif op == OP_CHMOD:
                    a, mode = r.str(), r.uint(4)
                    if act:
                        os.chmod(a, mode)
                elif op == OP_IF_EXISTS:
                    a = r.str()
                    if act and not os.path.lexists(a):
                        skip = 2
                elif op == OP_UMOUNT:
                    a, flags = r.str(), r.uint(4)
                    if act:
                        _sys(SYS_UMOUNT2, a.encode(), flags)
                elif op == OP_RMDIR:
                    a = r.str()
                    if act:
                        os.rmdir(a)
                elif op == OP_PIVOT_ROOT:
                    # runc's pivot_root(".", ".") (init_linux.c's): the
                    # zygote's whole tree is left behind.
                    a = r.str()
                    if act:
                        os.chdir(a)
                        _sys(SYS_PIVOT_ROOT, b".", b".")
                        _sys(SYS_UMOUNT2, b".", MNT_DETACH)
                        os.chdir("/")
                elif op == OP_HOSTNAME:
                    a = r.str()
                    if act:
                        socket.sethostname(a)
                elif op == OP_DOMAINNAME:
                    a = r.str()
                    if act:
                        _sys(SYS_SETDOMAINNAME, a.encode(), len(a.encode()))
                elif op == OP_LOOPBACK_UP:
                    if act:
                        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                            fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sh22x", b"lo",
                                                                     IFF_UP | IFF_LOOPBACK | IFF_RUNNING))
                elif op == OP_CHDIR:
                    a = r.str()
                    if act:
                        os.chdir(a)
                elif op == OP_SECCOMP:
                    f = r.bytes()
                    if filters:
                        raise _Fail(stage, 0, "malformed plan: a second filter")
                    filters = True
                    if not f or len(f) % 8 or len(f) // 8 > 4096 or f[-8:-6] != b"\x06\x00":
                        raise _Fail(stage, 0, "malformed plan: no usable filter")
                    if act:
                        st.filter = bytes(f)
                elif op == OP_STDIO:
                    n = r.uint(4)
                    if n != len(fds):
                        raise _Fail(stage, 0, "malformed plan: wrong number of fds with the request")
                    if act:
                        for i, fd in enumerate(fds):
                            os.dup2(fd, i, inheritable=True)
                            os.close(fd)
                elif op == OP_RLIMIT:
                    res, soft, hard = r.uint(4), r.uint(8), r.uint(8)
                    if act:
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
                    if act:
                        st.report, st.collect, st.argv, st.env = bool(report), bool(collect), lists[0], lists[1]
                else:
                    raise _Fail("decode plan", 0, "malformed plan: an unknown step")
            except OSError as e:
                raise _Fail(stage, e.errno or 0, "")
            if skip:
                skip -= 1
        if cond:
            raise _Fail("decode plan", 0, "malformed plan: a condition with no step after it")
    finally:
        if wdir is not None:
            os.close(wdir)


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
    # The run's init is re-parented to the zygote when the fork that made
    # it exits: the zygote reaps it (and every fork), nobody else must.
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    signal.signal(signal.SIGCHLD, _reap)
    cfg = json.loads(sys.argv[1])
    ctl = socket.socket(fileno=REPORT_FD)
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
        try:
            typ, payload, fds = _recv(ctl)
        except Gone:
            os._exit(0)  # the daemon dropped this zygote
        # A run's uid is one of the range, mapped from ZYGOTE_INSIDE up
        # (zygote_linux.go's zygoteInside): never this zygote's own (1000)
        # nor anything below.
        if typ != Z_FORK or len(fds) != 1 or len(payload) != 4 or struct.unpack("<I", payload)[0] < ZYGOTE_INSIDE:
            for fd in fds:
                os.close(fd)
            continue
        pid = os.fork()
        if pid == 0:
            run = socket.socket(fileno=fds[0])
            try:
                ctl.close()
                _fork(run, struct.unpack("<I", payload)[0])
            except BaseException as e:
                _fail(run, e)
        os.close(fds[0])


def _reap(*_):
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG | WALL)
        except ChildProcessError:
            return
        if pid == 0:
            return


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


# ---- one warm run ----

RUNPROC = "/.runproc"  # plan.go's runProcDir: the zygote's writable proc


def _write_proc(name, data):
    fd = os.open(RUNPROC + "/self/" + name, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, data.encode())
    finally:
        os.close(fd)


def _fork(run, uid):
    """The fork: the run's identity and user namespace, its other
    namespaces, and its init. uid is the run's uid in the zygote's
    namespace (its host uid, mapped there)."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    # The run's uid and gid, before its namespace: the namespace is that
    # user's (the kernel charges what it holds to its owner), and the fork
    # may then map itself there without any privilege.
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    _sys(SYS_UNSHARE, CLONE_NEWUSER)
    # Its /proc/self files are its own only while it is dumpable.
    _prctl(PR_SET_DUMPABLE, 1)
    _write_proc("setgroups", "deny")
    _write_proc("uid_map", "%d %d 1\n" % (JAIL_ID, uid))
    _write_proc("gid_map", "%d %d 1\n" % (JAIL_ID, uid))
    _prctl(PR_SET_DUMPABLE, 0)
    # The creator of a namespace has every capability in it: only the
    # three that the run's set-up needs are kept; the run's init drops
    # them before the program starts.
    _capset((CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SETPCAP))
    _sys(SYS_UNSHARE, CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID)
    if os.fork() == 0:
        try:
            _init(run)
        except BaseException as e:
            _fail(run, e)
    os._exit(0)


_program = -1


def _forward(sig, _):
    if _program > 0:
        try:
            os.kill(_program, sig)
        except OSError:
            pass


def _init(run):
    """Pid 1 of the run: init_linux.c's aj_init and aj_start_program."""
    _retitle(["agentjail-init"], [])  # as a cold jail's init shows itself
    st = _State()
    typ, plan, fds = _recv(run)
    if typ != MSG_BUILD or fds:
        raise _Fail("read build plan", 0, "unexpected message instead of the build plan")
    _carry_out(st, plan, fds)
    if st.argv is not None:
        raise _Fail("read build plan", 0, "the build plan names the program")
    mnt = os.open("/proc/self/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
    _send(run, MSG_READY, b"", [mnt])
    os.close(mnt)
    try:
        typ, plan, fds = _recv(run)
    except Gone:
        os._exit(0)  # the daemon dropped this run before its request
    if typ != MSG_REQUEST:
        for fd in fds:
            os.close(fd)
        raise _Fail("read request", 0, "unexpected message instead of the request")
    _carry_out(st, plan, fds)
    # The files are in /workspace now: their bytes in the plan go, before
    # the program runs (this process is still in its zygote's cgroup).
    del plan
    if st.argv is None:
        raise _Fail("decode request", 0, "no program to exec")
    _send(run, MSG_READY)
    try:
        typ, _, join = _recv(run)
    except Gone:
        os._exit(1)
    if typ != MSG_GO:
        os._exit(1)
    _start_program(run, st, join)


def _start_program(run, st, join):
    """init_linux.c's aj_start_program: join, cgroup namespace,
    capabilities, close-on-exec, seccomp, then the program as a fork, and
    this process as the run's init."""
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
    c = 0
    while True:
        try:
            _prctl(PR_CAPBSET_DROP, c)
        except OSError as e:
            if e.errno == errno.EINVAL:
                break
            raise _Fail("drop capability %d from the bounding set" % c, e.errno)
        c += 1
    _sys(SYS_PRCTL, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    _capset(())
    workspace = os.open("/workspace", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) if st.collect else -1
    for sig in FORWARDED:
        signal.signal(sig, _forward)
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    listener = _install_filter(st.filter)
    _send(run, MSG_SECCOMP, b"", [listener] + ([workspace] if workspace >= 0 else []))
    os.close(listener)
    if workspace >= 0:
        os.close(workspace)
    global _program
    at = time.clock_gettime_ns(CLOCK_MONOTONIC)
    pid = os.fork()
    if pid == 0:
        _run_program(run, st)
    _program = pid
    # Only the program's processes may hold its stdio and report channel:
    # their ends are what tells the daemon that the output is complete.
    for fd in range(0, REPORT_FD + 1):
        try:
            os.close(fd)
        except OSError:
            pass  # fd 3 when the run has no report channel
    _send(run, MSG_EXEC, struct.pack("<q", at))
    while True:
        p, status = os.waitpid(-1, WALL)
        if p == pid:
            _send(run, MSG_EXIT, struct.pack("<i", status))
            os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


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


def _install_filter(f):
    buf = ctypes.create_string_buffer(f, len(f))
    prog = _SockFprog(len(f) // 8, ctypes.addressof(buf))
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
        for sig in FORWARDED + (signal.SIGCHLD,):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        # A program is dumpable, as one that python3's exec started is:
        # its own /proc files are its user's.
        _prctl(PR_SET_DUMPABLE, 1)
        _sys(SYS_CLOSE_RANGE, REPORT_FD + 1 if st.report else REPORT_FD, 0xFFFFFFFF, 0)
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
        _reseed()
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
