# agentjail harness, the part loaded only when needed: the uncaught
# exception (its record, and its traceback printed without the harness's
# frames) and the tests (the function called once per case, what it returned
# or raised recorded). harness.py loads it into a namespace of its own, with
# its own copy of the builtins. The records are documented in
# daemon/harness/harness.go.
#
# Nothing here is a security boundary: the submitted code runs in this
# process and can reach and change all of it. The daemon never trusts a
# record for more than what the code could have produced by returning or
# raising, and computes every verdict itself, from expected values that
# never enter the jail. What this file must do is make honest programs
# behave exactly as under plain python, and report faithfully.
import io
import os
import stat
import sys

FD = 3  # the report channel
MAX_VALUE = 1 << 20  # characters of one return value's JSON text; past it the value is reported by its repr
MAX_REPR = 4000
MAX_MESSAGE = 4000
MAX_TRACEBACK = 64 << 10
MAX_MRO = 32
MAX_DISPLAY = 8 << 20  # bytes of display entries sent (daemon/harness/display.go's bound); past it, only their size
MAX_DISPLAY_N = 32  # display entries sent; past it, only their size

# python's own sys.path, before the program's directory was put first on it
# (harness.py and session.py give it): the harness imports from it alone.
_STDPATH = tuple(globals().get("_stdpath", sys.path))
_write = os.write
_getpid = os.getpid
_display = sys.__excepthook__  # python's own: prints a traceback exactly as an uncaught exception's
_MISSING = object()
_shown = [None]  # the Harness whose report channel plt.show() writes to: a session's current call's


class Harness:
    def __init__(self, skip, code_dir, pid):
        self.skip = skip | {sys._getframe().f_code.co_filename}  # the files whose frames are not the program's
        self.dir = code_dir
        self.main = code_dir + "/main.py"
        self.pid = pid  # a process the program forks runs this code too, and must not report
        try:
            self.fd = FD if stat.S_ISFIFO(os.fstat(FD).st_mode) else -1
        except OSError:
            self.fd = -1
        self.spec_error = None
        self.display_left, self.display_n = MAX_DISPLAY, 0
        _shown[0] = self
        self.stop = None  # a session's: when it returns true, no further case runs (the call was interrupted)
        if os.path.exists(code_dir + "/tests.json"):
            self.prepare()

    def send(self, line):
        """Writes one record; a failure closes the channel for good, so a
        case whose record was lost is not reported and the daemon fails it."""
        if self.fd < 0 or _getpid() != self.pid:
            return
        data = memoryview((line + "\n").encode("ascii", "backslashreplace"))
        try:
            while data:
                data = data[_write(self.fd, data):]
        except OSError:
            self.fd = -1

    # The uncaught exception.

    def uncaught(self, e, ns, src):
        """Called with the program's uncaught exception, before the entry
        re-raises it to python's own handler (so that exit status, finalisation
        and KeyboardInterrupt's exit stay python's); src is the source when it
        did not compile."""
        if src is not None and _undecodable(src):
            # python reads a file that it cannot decode (a bad coding cookie,
            # invalid UTF-8, a NUL byte) in ways compile() does not mimic:
            # let python itself run it, as if there were no harness.
            try:
                os.execv(sys.executable, self.plain_argv())
            except OSError:
                pass
        orig = sys.excepthook
        harness = self

        def hook(t, v, tb):
            sys.excepthook = orig
            tb = harness.strip(v, tb)
            sys.last_type, sys.last_value, sys.last_traceback = t, v, tb
            if hasattr(sys, "last_exc"):
                sys.last_exc = v
            text = harness.display(t, v, tb)
            harness.report_exception(t, v, tb, text)
            err = sys.stderr
            if orig is _display and err is not None:
                _put(err, text)
            else:
                try:
                    orig(t, v, tb)
                except SystemExit:
                    raise
                except BaseException as he:  # as PyErr_Print does when the hook fails
                    htb = harness.strip(he, he.__traceback__)
                    _put(sys.stderr, "Error in sys.excepthook:\n" + harness.display(type(he), he, htb)
                         + "\nOriginal exception was:\n" + text)
            ns.pop("__file__", None)  # as CPython does once __main__ has run
            ns.pop("__cached__", None)

        sys.excepthook = hook

    def strip(self, v, tb):
        """Removes the harness's frames from the top of a traceback."""
        while tb is not None and tb.tb_frame.f_code.co_filename in self.skip:
            tb = tb.tb_next
        try:
            v.__traceback__ = tb  # what python's display prints
        except BaseException:
            pass
        return tb

    def display(self, t, v, tb):
        """The text python prints for an uncaught exception."""
        buf = io.StringIO()
        saved = sys.stderr
        sys.stderr = buf
        try:
            _display(t, v, tb)
        except BaseException:
            pass
        finally:
            sys.stderr = saved
        return buf.getvalue()

    def report_exception(self, t, v, tb, text):
        if self.fd < 0:
            return
        try:
            if isinstance(v, SyntaxError) and v.filename == self.main and isinstance(v.lineno, int):
                line = v.lineno
                msg = v.msg if isinstance(v.msg, str) else _str(v)
            else:
                line = self.line(tb)
                msg = _str(v)
            q = _quote()
            self.send('{"t":"exception","type":%s,"message":%s,"line":%d,"traceback":%s}' % (
                q(_name(t)), q(_cap(msg, MAX_MESSAGE)), line, q(_cap_tail(text, MAX_TRACEBACK))))
        except BaseException:
            pass

    def line(self, tb):
        """The line of the innermost frame in the submitted code; 0 when none."""
        n = 0
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.main:
                n = tb.tb_lineno
            tb = tb.tb_next
        return n if isinstance(n, int) else 0

    def plain_argv(self):
        o = getattr(sys, "orig_argv", None)
        if o:
            return o[:len(o) - len(sys.argv)] + [self.main]
        return [sys.executable, "-I", "-u", self.main]

    # The display: what a notebook would show.

    def send_display(self, mime, data):
        """One display entry: bytes (sent in base64) or text. Past the
        harness's bounds only its size is sent, and the daemon says the
        display was cut."""
        n = len(data) if isinstance(data, bytes) else len(data.encode("utf-8", "surrogatepass"))
        q = _quote()
        if n > self.display_left or self.display_n >= MAX_DISPLAY_N:
            self.display_left = 0
            self.send('{"t":"display","mime":%s,"bytes":%d}' % (q(mime), n))
            return
        self.display_left -= n
        self.display_n += 1
        if isinstance(data, bytes):
            data = _std("binascii").b2a_base64(data, newline=False).decode("ascii")
        self.send('{"t":"display","mime":%s,"data":%s}' % (q(mime), q(data)))

    def figures(self, plt):
        """Sends each open figure of pyplot as PNG, in the order of their
        numbers, and closes them, as a notebook's plt.show() does."""
        try:
            nums = plt.get_fignums()
        except BaseException:
            return
        for num in nums:
            try:
                buf = io.BytesIO()
                plt.figure(num).savefig(buf, format="png")
                self.send_display("image/png", buf.getvalue())
            except Exception:
                pass
        try:
            plt.close("all")
        except Exception:
            pass

    def patch_pyplot(self, plt):
        _patch_pyplot(plt)

    def pyplot_spec(self, name, path=None, target=None):
        return PyplotFinder().find_spec(name, path, target)

    def rich(self, v):
        """The first rich form a notebook would show of a value: its
        _repr_png_, _repr_html_ (a pandas DataFrame's table) or
        _repr_markdown_."""
        if v is None or isinstance(v, type):
            return
        for meth, mime, kind in (("_repr_png_", "image/png", bytes), ("_repr_html_", "text/html", str),
                                 ("_repr_markdown_", "text/markdown", str)):
            try:
                f = getattr(v, meth, None)
                out = f() if callable(f) else None
                if isinstance(out, tuple) and out:
                    out = out[0]  # (data, metadata)
            except Exception:
                continue
            if isinstance(out, kind):
                self.send_display(mime, out)
                return

    # The tests.

    def prepare(self, data=None):
        """Reads tests.json (or data, its bytes: a session's call brings
        them) and imports what the tests need, before the program runs; a
        tests.json it cannot use fails every case."""
        import time
        self.perf = time.perf_counter
        self.quote = _quote()
        self.dumps = _encoder(",", ":", True)  # for the records
        self.encode = _encoder(", ", ": ", False)  # for return values: as json.dumps(x, allow_nan=False)
        self.repr = None
        try:
            if data is None:
                with open(self.dir + "/tests.json", "rb") as f:
                    data = f.read()
            spec = _loads(data.decode("utf-8"))
            function, cases = spec["function"], spec["cases"]
            if not isinstance(function, str) or not isinstance(cases, list):
                raise ValueError("function must be a string and cases a list")
            self.cases = []
            for c in cases:
                args, kwargs = c.get("args", []), c.get("kwargs", {})
                if not isinstance(args, list) or not isinstance(kwargs, dict):
                    raise ValueError("args must be a list and kwargs an object")
                self.cases.append((args, kwargs))
            self.function = function
        except Exception as e:
            self.spec_error = "%s: %s" % (type(e).__name__, _str(e))

    def run_tests(self, ns):
        """Calls the function once per case, after the program ran."""
        if self.spec_error is not None:
            self.send(self.dumps({"t": "tests", "error": self.spec_error}))
        else:
            fn = ns.get(self.function, _MISSING)
            n = len(self.cases)
            if fn is _MISSING:
                self.send(self.dumps({"t": "tests", "n": n, "function": "missing"}))
            elif not callable(fn):
                self.send(self.dumps({"t": "tests", "n": n, "function": "not_callable", "type": _typename(fn)}))
            else:
                self.send(self.dumps({"t": "tests", "n": n, "function": "ok"}))
                for i, (args, kwargs) in enumerate(self.cases):
                    self.run_case(fn, i, args, kwargs)
                    if self.stop is not None and self.stop():
                        return  # interrupted: the case that ran and those after are not reported, and no "end"
        self.send('{"t":"end"}')

    def run_case(self, fn, i, args, kwargs):
        perf = self.perf
        t0 = perf()
        try:
            r = fn(*args, **kwargs)
            if type(r).__name__ == "coroutine" and hasattr(r, "send"):
                # An async def function: its result is what the coroutine
                # returns, run to its end in a fresh event loop per case
                # (asyncio is imported only for such a program).
                r = _std("asyncio").run(r)
        except BaseException as e:  # SystemExit and KeyboardInterrupt too: a case never stops the others
            if self.stop is not None and self.stop():
                return  # but agentjail's interrupt of a session's call does
            ms = (perf() - t0) * 1e3
            try:
                self.send(self.raised(i, ms, e))
            except BaseException:
                pass
            return
        ms = (perf() - t0) * 1e3
        try:
            self.send(self.returned(i, ms, r))
        except BaseException:
            pass

    def returned(self, i, ms, r):
        q = self.quote
        typ = _typename(r)
        why = None
        try:
            text = self.encode(r)  # tuples become lists; NaN, sets, cycles... raise
            if not isinstance(text, str):
                why = "the JSON encoder returned no text"
            elif len(text) > MAX_VALUE:
                why = "its JSON text has %d characters, more than the %d the harness reports" % (len(text), MAX_VALUE)
            elif "\n" in text:
                why = "its JSON text is not one line"
        except BaseException as e:  # user code runs in the encoder (a dict subclass's items()...)
            why = _str(e) or _name(type(e))
        if why is None:
            return '{"t":"case","i":%d,"ms":%r,"type":%s,"value":%s}' % (i, round(ms, 4), q(typ), text)
        try:
            if self.repr is None:  # a repr bounded in size and depth, however large r is
                b = _std("reprlib").Repr()
                b.maxlevel = 8
                b.maxtuple = b.maxlist = b.maxarray = b.maxdict = b.maxset = b.maxfrozenset = b.maxdeque = 100
                b.maxstring = b.maxlong = b.maxother = 1000
                self.repr = b.repr
            s = self.repr(r)
            if not isinstance(s, str):
                raise TypeError
        except BaseException:
            s = "<%s object>" % typ
        return '{"t":"case","i":%d,"ms":%r,"type":%s,"repr":%s,"why":%s}' % (
            i, round(ms, 4), q(typ), q(_cap(s, MAX_REPR)), q(_cap(why, MAX_MESSAGE)))

    def raised(self, i, ms, e):
        try:
            mro = [_name(c) for c in type(e).__mro__ if c is not object]
        except BaseException:
            mro = [_name(type(e))]
        if len(mro) > MAX_MRO:  # the daemon's bound (report.go maxMRO): itself and its most general bases
            mro = mro[:1] + mro[1 - MAX_MRO:]
        return self.dumps({"t": "case", "i": i, "ms": round(ms, 4), "raised": {
            "type": mro[0], "mro": mro, "message": _cap(_str(e), MAX_MESSAGE), "line": self.line(e.__traceback__)}})


def _patch_pyplot(plt):
    """plt.show() sends the open figures to the current report channel
    instead of Agg's warning that it cannot show them."""
    def show(*args, **kwargs):
        h = _shown[0]
        if h is not None:
            h.figures(plt)
    try:
        show.__doc__, show.__wrapped__ = plt.show.__doc__, plt.show
        plt.show = show
    except BaseException:
        pass


class PyplotFinder:
    """A finder first on sys.meta_path until the program imports
    matplotlib.pyplot: it patches plt.show once the module has run.
    matplotlib is never imported for a program that does not."""

    def find_spec(self, name, path=None, target=None):
        if name != "matplotlib.pyplot":
            return None
        meta = sys.meta_path
        if self in meta:
            meta.remove(self)
        for f in meta:
            find = getattr(f, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _PatchingLoader(spec.loader)
        return spec


class _PatchingLoader:
    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _patch_pyplot(module)


# JSON without the json package: importing it (re, enum, collections...)
# costs every run time, and, because those run exec() on source, makes python forget
# that a KeyboardInterrupt is unhandled (it exits 1 instead of dying of
# SIGINT). Its C accelerator _json, built into python, does the work, as it
# does for json.dumps and json.loads.

def _quote():
    """A function that makes a str a JSON string, in ASCII."""
    try:
        return _std("_json").encode_basestring_ascii
    except (ImportError, AttributeError):
        return _py_quote


def _encoder(item_separator, key_separator, allow_nan):
    """json.dumps with these separators (and ensure_ascii, no indent)."""
    try:
        j = _std("_json")
        encode_basestring_ascii, make_encoder = j.encode_basestring_ascii, j.make_encoder
    except (ImportError, AttributeError):
        return _std("json").JSONEncoder(separators=(item_separator, key_separator), allow_nan=allow_nan).encode

    def default(o):
        raise TypeError("Object of type %s is not JSON serializable" % type(o).__name__)

    def encode(o):
        # markers: the objects being encoded, to refuse a cycle; a fresh dict
        # each time, as json's own encoder does.
        enc = make_encoder({}, default, encode_basestring_ascii, None, key_separator, item_separator,
                           False, False, allow_nan)
        return "".join(enc(o, 0))
    return encode


class _Context:
    """What _json's scanner reads from a json.JSONDecoder."""
    strict = True
    object_hook = object_pairs_hook = None
    parse_float = parse_constant = float
    parse_int = int


def _loads(s):
    """json.loads of what the daemon wrote: one compact JSON value."""
    try:
        make_scanner = _std("_json").make_scanner
    except (ImportError, AttributeError):
        return _std("json").loads(s)
    try:
        value, end = make_scanner(_Context())(s, 0)
    except StopIteration as e:
        raise ValueError("not JSON at character %d" % e.value)
    if end != len(s):
        raise ValueError("more than one JSON value")
    return value


def _py_quote(s):
    out = ['"']
    for ch in s:
        c = ord(ch)
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif 0x20 <= c < 0x7F:
            out.append(ch)
        elif c > 0xFFFF:
            c -= 0x10000
            out.append("\\u%04x\\u%04x" % (0xD800 | (c >> 10), 0xDC00 | (c & 0x3FF)))
        else:
            out.append("\\u%04x" % c)
    out.append('"')
    return "".join(out)


def _undecodable(src):
    if b"\0" in src:
        return True
    try:
        enc, _ = _std("tokenize").detect_encoding(io.BytesIO(src).readline)
        src.decode(enc)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return True
    return False


def _put(f, text):
    try:
        f.write(text)
        f.flush()
    except BaseException:
        pass


def _name(c):
    """A class's name as python prints it in a traceback: qualified by its
    module unless that is builtins or __main__."""
    try:
        m, q = c.__module__, c.__qualname__
        if not isinstance(q, str):
            return "?"
        if isinstance(m, str) and m not in ("builtins", "__main__"):
            return m + "." + q
        return q
    except BaseException:
        return "?"


def _typename(x):
    try:
        n = type(x).__name__
        return n if isinstance(n, str) else "?"
    except BaseException:
        return "?"


def _str(x):
    try:
        return str(x)
    except BaseException:
        return "<str() failed>"


def _cap(s, n):
    return s if len(s) <= n else s[:n] + "..."


def _cap_tail(s, n):
    return s if len(s) <= n else "..." + s[-n:]


def _std(name):
    """The module name of python's own: what the harness imports once the
    program may have run is never a file of the program's, though the
    program's directory is first on sys.path (a json.py, a _json.py or a
    tokenize.py among the request's files). A module already imported from
    python's own path is taken as it is; otherwise it is imported with
    sys.path set to python's own for the time of the import, and a module
    of the program's of that name stays the program's."""
    mods = sys.modules
    m = mods.get(name)
    if m is not None and _ours(m):
        return m
    path = sys.path
    sys.path = list(_STDPATH)
    try:
        if m is not None:
            del mods[name]
        __import__(name)
        return mods[name]
    finally:
        sys.path = path
        if m is not None:
            mods[name] = m


def _ours(m):
    """Whether module m is python's: built in, frozen, or a file below
    python's own sys.path."""
    try:
        f = m.__dict__.get("__file__")
    except BaseException:
        return False
    if f is None:
        return True
    return isinstance(f, str) and any(f.startswith(p + "/") for p in _STDPATH if p)
