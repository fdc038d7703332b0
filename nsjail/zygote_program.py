# agentjail zygote, continued: one warm run's program, from the fork on.
# nsjail ships zygote.py and this file as one program, in that order
# (zygote_source_linux.go): the names of zygote.py are this file's too.

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
        # _signal's functions, not signal's: those wrap each answer in an
        # enum member, python code whose objects a fork's first call
        # writes to (about 40 pages copied a run).
        _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
        _signal.pthread_sigmask(_signal.SIG_SETMASK, ())
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
        if not _caps:
            raise _Fail("drop the bounding set", 0, "the zygote did not read the kernel's capabilities")
        for c in _caps:
            if _prctl_fn(PR_CAPBSET_DROP, c, 0, 0, 0):
                raise _Fail("drop capability %d from the bounding set" % c, ctypes.get_errno())
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
    """init_run_linux.c's aj_start_program for a fork: join, cgroup namespace,
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
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)
        _sys(SYS_CLOSE_RANGE, REPORT_FD + 1 if st.report else REPORT_FD, 0xFFFFFFFF, 0)
        # A program is dumpable, as one that python3's exec started is:
        # its own /proc files are its user's. Only now: no fd of the
        # set-up is left to read through them.
        _prctl(PR_SET_DUMPABLE, 1)
        # Only what differs from the zygote's environment changes: each
        # change is a libc call and os.environ's python code, whose objects
        # a fork's first use copies. Most runs change nothing, which one
        # comparison with the zygote's environment (_env) tells.
        env = dict(kv.partition("=")[::2] for kv in st.env)
        if env != _env:
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
    # As python's own exit: the threads are joined through threading if
    # the program imported it. The zygote does not import it, for its
    # fork hook would cost every run some 100 pages copied.
    threading = sys.modules.get("threading")
    try:
        if threading is not None:
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
