# agentjail session server: the program of a session's jail, as
# /code/agentjail_session.py. It runs every call of the session in this one
# interpreter and one __main__ namespace, as a notebook's kernel runs its
# cells: variables, imports, functions and open files last from one call to
# the next. nsjail/session_linux.go draws the protocol on fd 3 and does all
# that must be trusted (the limits, the figures, the kill reasons);
# daemon/harness/session.go builds each call's payload and reads its end.
#
# Nothing here is a security boundary: a call's code runs in this process
# and can change all of it. A session whose code breaks this server breaks
# itself only; the daemon ends it.
import _signal  # signal and socket's C modules: their python ones import enum, which costs a cold start
import _socket
import builtins
import errno
import os
import sys

CTL = 3  # the control socket (SOCK_SEQPACKET)
# /code and /workspace; only tests give others (arguments 1 and 2)
CODE, WORKSPACE = sys.argv[1:3] if len(sys.argv) == 3 else ("/code", "/workspace")
FEED_BUF = 64 << 10  # twice the largest message of a feed (feed_linux.go's feedChunk)
MAX_VALUE = 16384  # characters of a value's repr; a longer one is cut (the daemon's record bound is far above)

_pid = os.getpid()  # a process a call forks runs this code too, and must never answer for the session
_skip = {sys._getframe().f_code.co_filename}  # this file's frames are not the call's
_busy = False  # a call's code runs: an interrupt is a KeyboardInterrupt there
_interrupted = False  # this call was interrupted by agentjail (its wall, CPU or output limit)
_sources = {}  # each call's name -> its code, for the source lines of tracebacks
_put = None  # harness_lib's: writes text to a stream, whatever the stream does (set in main)
_std = None  # harness_lib's: imports a module of python's own, never a call's file of that name (set in main)


def _on_sigint(signum, frame):
    """agentjail interrupts a call with SIGINT to the jail's init, which
    forwards it here. SIGINT is blocked outside a call; this guard is for
    one that was already on its way when the call ended."""
    global _interrupted
    if _busy:
        _interrupted = True
        raise KeyboardInterrupt


def _arm():
    """The call's code starts: an interrupt now raises in it. One left
    pending from before (a race with the previous call's end, or a
    process of the session that signalled) is dropped first."""
    global _busy, _interrupted
    if _signal.SIGINT in _signal.sigpending():
        _signal.sigtimedwait((_signal.SIGINT,), 0)
    _interrupted = False
    _busy = True
    _signal.pthread_sigmask(_signal.SIG_UNBLOCK, (_signal.SIGINT,))


def _disarm():
    global _busy
    _signal.pthread_sigmask(_signal.SIG_BLOCK, (_signal.SIGINT,))
    _busy = False


def main():
    os.set_inheritable(CTL, False)  # no process a call starts may hold it
    ctl = _socket.socket(fileno=CTL)
    null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    ws = os.open(WORKSPACE, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    lib = _lib()
    global _put, _std
    _put, _std = lib["_put"], lib["_std"]
    plt = sys.modules.get("matplotlib.pyplot")  # a warm zygote may have preloaded it
    if plt is not None:
        lib["_patch_pyplot"](plt)
    else:
        sys.meta_path.insert(0, lib["PyplotFinder"]())  # plt.show() patched once a call imports pyplot
    main_mod = type(sys)("__main__")
    main_mod.__dict__.update(__builtins__=builtins, __annotations__={})
    sys.modules["__main__"] = main_mod
    sys.argv = [""]  # as an interactive interpreter's
    # The calls import the files they were given, as a notebook's cells
    # import those beside it: the workspace first on sys.path, only now
    # that python has started (see harness.py's _importable).
    sys.path.insert(0, WORKSPACE)
    _signal.signal(_signal.SIGINT, _on_sigint)
    _signal.pthread_sigmask(_signal.SIG_BLOCK, (_signal.SIGINT,))
    _stdio(null)
    ctl.send(b'{"t":"ready"}')
    while True:
        try:
            msg, fds = _recv(ctl)
        except KeyboardInterrupt:  # a handler the calls' code installed
            continue
        except OSError:
            os._exit(1)
        if not msg:
            os._exit(0)  # the daemon let go of this session
        try:
            head = lib["_loads"](msg.decode("utf-8"))
            n = head["n"] if head.get("t") == "call" and len(fds) == 5 else None
        except Exception:
            n = None
        if not isinstance(n, int):
            for fd in fds:
                os.close(fd)
            continue
        end = _call(lib, main_mod.__dict__, ws, null, fds)
        try:
            _send(ctl, lib, n, *end)
        except OSError:
            os._exit(1)


def _recv(ctl):
    """One message of the daemon and the fds it carried, close-on-exec."""
    msg, anc, _, _ = ctl.recvmsg(4096, _socket.CMSG_SPACE(8 * 4), _socket.MSG_CMSG_CLOEXEC)
    fds = []
    for level, kind, data in anc:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds += memoryview(data)[:len(data) - len(data) % 4].cast("i").tolist()
    return msg, fds


def _call(lib, ns, ws, null, fds):
    """Runs one call: its files, its stdio, its code, its tests; returns
    (status, value, refused) for its end record. A SystemExit of the
    call's code propagates: the session ends as a script would."""
    global _interrupted
    _interrupted = False  # this call's alone, even when its code never starts
    payload, stdin, out, err, report = fds
    try:
        feed = _Feed(payload)
        head = lib["_loads"](feed.line().decode("utf-8").removesuffix("\n"))
        name, n_code, n_tests = head["name"], head["code"], head["tests"]
        code = feed.read(n_code).decode("utf-8")
        tests = feed.read(n_tests) if n_tests >= 0 else None
        refused = _write_files(ws, head["files"], feed)
    finally:
        os.close(payload)
    if refused is not None:
        for fd in (stdin, out, err, report):
            os.close(fd)
        return 0, None, refused
    if head["files"]:
        _fresh_imports()
    stdin = _own_stdin(stdin)
    for fd, target in ((stdin, 0), (out, 1), (err, 2)):
        os.dup2(fd, target)
        os.close(fd)
    _fresh_stdin()
    if head.get("command") is not None:  # an argv, not code (daemon/command.go)
        status = _command(head["command"], report)
        _stdio(null)
        os.close(report)
        return status, None, None
    h = lib["Harness"](_skip, CODE, _pid)
    h.fd, h.main, h.stop = report, name, lambda: _interrupted
    if tests is not None:
        h.prepare(tests)
    _sources[name] = code
    status, value = 0, None
    try:
        try:
            main, last = _compile(code, name)
            _arm()
            exec(main, ns)
            v = eval(last, ns) if last is not None else None
            _forked(0)
            _display(h, v, last is not None)
            if tests is not None:
                h.run_tests(ns)
                if _interrupted:  # a case took the interrupt, and the cases stopped there
                    raise KeyboardInterrupt
            if last is not None:
                value = repr(v)
        finally:
            _disarm()
    except SystemExit as e:
        _forked(e)
        _flush()
        raise
    except BaseException as e:
        _disarm()
        _forked(e)
        status = 2 if isinstance(e, KeyboardInterrupt) else 1 << 8  # python dies of SIGINT, or exits 1
        _close_figures()
        _show(h, e)
    _flush()
    _stdio(null)
    os.close(report)
    if value is not None and len(value) > MAX_VALUE:
        value = value[:MAX_VALUE] + "… (%d characters in all)" % len(value)
    return status, value, None


class _Feed:
    """A call's payload or stdin as it comes (nsjail/feed_linux.go): the
    messages of a SOCK_SEQPACKET socket, up to its EOF, read one at a
    time into one buffer, so that what a call brings is never held here
    whole: code and tests are read, files and stdin copied a message at
    a time to where they go. What is copied is this session's memory
    (/workspace, a memfd of its own), counted against its limit."""

    def __init__(self, fd):
        self.fd, self.buf, self.pos, self.end = fd, bytearray(FEED_BUF), 0, 0

    def _fill(self):
        if self.pos == self.end:
            self.pos, self.end = 0, os.readv(self.fd, [self.buf])
        return self.end - self.pos

    def _take(self, n):
        v = memoryview(self.buf)[self.pos:min(self.pos + n, self.end)]
        self.pos += len(v)
        return v

    def line(self):
        out = bytearray()
        while self._fill():
            i = self.buf.find(b"\n", self.pos, self.end)
            out += self._take((i + 1 if i >= 0 else self.end) - self.pos)
            if i >= 0:
                break
        return bytes(out)

    def read(self, n):
        out = bytearray()
        while len(out) < n and self._fill():
            out += self._take(n - len(out))
        return bytes(out)

    def copy(self, fd, n):
        """Writes the next n bytes (all, up to EOF, when n is None) to fd;
        False when they ended early."""
        while (n is None or n > 0) and self._fill():
            v = self._take(self.end if n is None else n)
            if n is not None:
                n -= len(v)
            while v:
                v = v[os.write(fd, v):]
        return not n


def _display(h, v, trailing):
    """The call's display entries: the figures it left open (shown and
    closed, as a notebook does at a cell's end), then the trailing value's
    rich form."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        h.figures(plt)
    if trailing:
        h.rich(v)


def _close_figures():
    """A failed call's open figures are not the next call's to show."""
    plt = sys.modules.get("matplotlib.pyplot")
    try:
        if plt is not None:
            plt.close("all")
    except Exception:
        pass


def _own_stdin(fd):
    """The call's stdin: /dev/null as it came, or its feed copied into a
    memfd of this session's own, read from its start (a file, as a run's
    stdin is)."""
    if os.fstat(fd).st_mode & 0o170000 != 0o140000:  # not a socket
        return fd
    mem = os.memfd_create("stdin", os.MFD_CLOEXEC)
    try:
        _Feed(fd).copy(mem, None)
        os.lseek(mem, 0, os.SEEK_SET)
    except BaseException:
        os.close(mem)
        raise
    finally:
        os.close(fd)
    return mem


def _write_files(ws, files, feed):
    """Writes the call's files below /workspace from its feed; a message
    for its end record when one cannot be (the files before it are
    written)."""
    for i, (rel, size) in enumerate(files):
        try:
            _write_beneath(ws, rel, lambda fd: feed.copy(fd, size) or _cut())
        except OSError as e:
            why = e.strerror or e
            if e.errno == errno.EFBIG:
                why = "it is larger than the session's file_size_bytes (limits.file_size_bytes)"
            return {"i": i, "error": "cannot write /workspace/%s in this session: %s" % (rel, why)}
    return None


def _cut():
    raise OSError(0, "its bytes ended early")


def _write_beneath(ws, rel, fill):
    """Writes one file below the directory fd ws, making the directories on
    its way; fill(fd) writes its bytes. The calls' code may have left anything there: no symbolic link
    is followed (O_NOFOLLOW at each step), no FIFO is waited on
    (O_NONBLOCK), nothing but a regular file is written."""
    *dirs, name = rel.split("/")
    d = os.dup(ws)
    try:
        for el in dirs:
            try:
                os.mkdir(el, 0o755, dir_fd=d)
            except FileExistsError:
                pass
            sub = os.open(el, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=d)
            os.close(d)
            d = sub
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644, dir_fd=d)
    finally:
        os.close(d)
    try:
        if os.fstat(fd).st_mode & 0o170000 != 0o100000:
            raise OSError(0, "it is not a regular file")
        os.ftruncate(fd, 0)
        fill(fd)
    finally:
        os.close(fd)


def _compile(src, name):
    """The call's code, and its trailing expression apart (None when it
    does not end in one), whose value the call returns."""
    import _ast
    tree = compile(src, name, "exec", _ast.PyCF_ONLY_AST, dont_inherit=True)
    last = None
    if tree.body and type(tree.body[-1]) is _ast.Expr:
        last = compile(_ast.Expression(tree.body.pop().value), name, "eval", dont_inherit=True)
    return compile(tree, name, "exec", dont_inherit=True), last


def _forked(end):
    """In a process the call's code forked, which has run the rest of the
    call's code: it ends here, as a script's fork ends at the script's end
    (end: 0, or the SystemExit or exception it ended with)."""
    if os.getpid() == _pid:
        return
    code = 0
    if isinstance(end, SystemExit):
        code = end.code if isinstance(end.code, int) else (0 if end.code is None else 1)
    elif isinstance(end, BaseException):
        traceback = _std("traceback")
        _put(sys.stderr, "".join(traceback.format_exception(type(end), end, end.__traceback__)))
        code = 1
    _flush()
    os._exit(code & 0xFF)


def _show(h, e):
    """The call's uncaught exception: its record on the report channel and
    its traceback on the call's stderr, as python prints one, with the
    source lines of every call (linecache), without this file's frames."""
    linecache, traceback = _std("linecache"), _std("traceback")  # never a file of the calls' of that name
    for n, src in _sources.items():  # again each time: the calls' code may have cleared the cache
        linecache.cache.setdefault(n, (len(src), None, src.splitlines(True), n))
    t = type(e)
    tb = _drop_handler(h.strip(e, e.__traceback__))
    sys.last_type, sys.last_value, sys.last_traceback = t, e, tb
    try:
        text = "".join(traceback.format_exception(t, e, tb))
    except BaseException:
        text = h.display(t, e, tb)
    h.report_exception(t, e, tb, text)
    _put(sys.stderr, text)


def _drop_handler(tb):
    """An interrupt's traceback ends in this file's signal handler, which
    raised it: the call's code ends at the frame before."""
    last, t = None, tb
    while t is not None:
        if t.tb_frame.f_code.co_filename not in _skip:
            last = t
        t = t.tb_next
    if last is not None:
        last.tb_next = None
    return tb


def _fresh_imports():
    """The call's files are new to python's import system: what it
    remembers of the workspace's directory listing is dropped."""
    finder = sys.path_importer_cache.get(WORKSPACE)
    if finder is not None and hasattr(finder, "invalidate_caches"):
        try:
            finder.invalidate_caches()
        except Exception:
            pass


def _fresh_stdin():
    """sys.stdin anew over the call's fd 0, unless the calls' code put its
    own: the last one's buffer may hold what the last call's stdin had."""
    global _stdin
    if sys.stdin is not _stdin:
        return
    _stdin = sys.stdin = sys.__stdin__ = open(0, "r", encoding=_stdin.encoding, errors=_stdin.errors, closefd=False)


def _command(argv, report):
    """Runs a call's command in a session of its own, on the call's stdio;
    its exit status is the call's (128+N when signal N ended it). A missing program exits 127 and says so
    on the report pipe. agentjail's interrupt (a limit of the call) kills
    the command's process group, and what it left running there is killed
    when it ends."""
    try:
        pid = os.posix_spawnp(argv[0], argv, os.environ, setsid=True, setsigmask=(),
                              setsigdef=(_signal.SIGINT, _signal.SIGPIPE, _signal.SIGXFSZ))
    except OSError as e:
        missing = isinstance(e, FileNotFoundError)
        os.write(2, ("agentjail: %s: %s\n" % (argv[0], "command not found" if missing else e.strerror)).encode("utf-8", "surrogateescape"))
        if missing:
            os.write(report, b"missing\n")
        return (127 if missing else 126) << 8
    status = None
    try:
        _arm()
        status = os.waitpid(pid, 0)[1]
    except KeyboardInterrupt:
        pass
    finally:
        _disarm()
        try:
            os.killpg(pid, _signal.SIGKILL)
        except OSError:
            pass
        if status is None:
            os.waitpid(pid, 0)
    if status is None:
        return _signal.SIGINT  # agentjail's interrupt
    if os.WIFSIGNALED(status):  # the call's end claims an exit, as a shell reports a signal
        return (128 + os.WTERMSIG(status)) << 8
    return status


def _stdio(null):
    for fd in (0, 1, 2):
        os.dup2(null, fd)


def _flush():
    for f in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            f.flush()
        except BaseException:
            pass


def _send(ctl, lib, n, status, value, refused):
    q = lib["_quote"]()
    rec = '{"t":"end","n":%d,"status":%d,"value":%s' % (n, status, "null" if value is None else q(value))
    if refused is not None:
        rec += ',"refused":{"i":%d,"error":%s}' % (refused["i"], q(refused["error"]))
    if _interrupted and status != 2:
        rec += ',"caught":true'  # agentjail's interrupt was raised in the code, which caught it and went on
    try:
        ctl.send((rec + "}").encode("ascii"))
    except OSError as e:
        if e.errno != errno.EMSGSIZE or value is None or len(value) <= 1000:  # a socket buffer smaller than Linux's default
            raise
        _send(ctl, lib, n, status, value[:1000] + "… (cut to fit agentjail's control channel)", refused)


def _lib():
    """harness_lib.py's namespace, from the code agentjail's build compiled
    (harness.bin, for this python's bytecode) or from its source."""
    import _frozen_importlib_external as fie
    try:
        with open(CODE + "/agentjail_harness.bin", "rb") as f:
            blob = f.read()
    except OSError:
        blob = b""
    ns = {"__name__": "agentjail_harness_lib", "__builtins__": dict(builtins.__dict__), "_stdpath": list(sys.path)}
    if blob[:4] == fie.MAGIC_NUMBER:
        import marshal
        exec(marshal.loads(marshal.loads(memoryview(blob)[4:])[1]), ns)
    else:
        path = CODE + "/agentjail_harness_lib.py"
        with open(path, "rb") as f:
            exec(compile(f.read(), path, "exec", dont_inherit=True), ns)
    return ns


_stdin = sys.stdin

if __name__ == "__main__":
    main()
