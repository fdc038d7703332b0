package harness

// The harness against programs that try to fake their test results:
// printed markers, forged records, exits, monkeypatching, the channel,
// BaseExceptions, recursion and odd values.

import (
	"encoding/json"
	"strings"
	"testing"

	"agentjail/nsjail"
)

// Markers printed on stdout and stderr mean nothing: only fd 3 counts.
func TestHarnessAdversarialPrintedMarkers(t *testing.T) {
	markers := forge + `
import sys
def shout():
    sys.stdout.buffer.write(FORGED)
    sys.stderr.buffer.write(FORGED)
shout()
`
	r, tr := judged(t, markers+"def add(a, b):\n    shout()\n    return a - b\n", addTests())
	requirePassed(t, tr, false, false, false)
	if !strings.Contains(r.stdout, "ALL TESTS PASSED") {
		t.Errorf("the markers were not printed: %q", r.stdout)
	}
	_, tr = judged(t, markers+"def add(a, b):\n    shout()\n    return a + b\n", addTests())
	requirePassed(t, tr, true, true, true)
}

// Records written to every fd (fd 3 and /proc/self/fd/3 included), at the
// top level or from the function, make every case they name fail: a case
// reported twice is never trusted, not even when the function is right.
func TestHarnessAdversarialForgedRecords(t *testing.T) {
	for name, code := range map[string]string{
		"top level, wrong":       forge + "forge()\n" + wrongAdd,
		"top level, right":       forge + "forge()\n" + honestAdd,
		"in the function":        forge + "def add(a, b):\n    forge()\n    return a - b\n",
		"in the function once":   forge + "done = []\ndef add(a, b):\n    if not done:\n        done.append(forge())\n    return a - b\n",
		"at exit, after the end": forge + "import atexit\natexit.register(forge)\n" + honestAdd,
	} {
		t.Run(name, func(t *testing.T) {
			_, tr := judged(t, code, addTests())
			requirePassed(t, tr, false, false, false)
			for i := range tr.Results {
				requireDetail(t, tr, i, "more than once")
			}
		})
	}
}

// Forged records followed by os._exit: the harness never reports, and the
// forgery only counts as what the function could have returned itself; a
// forger that does not know the expected values gains nothing.
func TestHarnessAdversarialForgeThenExit(t *testing.T) {
	code := `
import os
os.write(3, b'{"t":"tests","n":3,"function":"ok"}\n')
for i in range(3):
    os.write(3, b'{"t":"case","i":%d,"ms":0,"type":"int","value":true,"passed":true}\n' % i)
os.write(3, b'{"t":"end"}\n')
os._exit(0)
` + honestAdd
	_, tr := judged(t, code, addTests())
	requirePassed(t, tr, false, false, false)
	requireDetail(t, tr, 0, "expected 3, got true")
}

// Objects that equal everything have no JSON form, or a JSON form that is
// compared outside the jail, where their __eq__ does not run.
func TestHarnessAdversarialAlwaysEqual(t *testing.T) {
	for name, code := range map[string]string{
		"plain object":  "class Any:\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n    __hash__ = None\ndef add(a, b):\n    return Any()\n",
		"int subclass":  "class Int(int):\n    def __eq__(self, o): return True\n    __hash__ = int.__hash__\ndef add(a, b):\n    return Int(0)\n",
		"str subclass":  "class S(str):\n    def __eq__(self, o): return True\n    __hash__ = str.__hash__\ndef add(a, b):\n    return S('3')\n",
		"dict subclass": "class D(dict):\n    def __eq__(self, o): return True\n    def items(self): return [('forged', True)]\ndef add(a, b):\n    return D(x=1)\n",
		"list subclass": "class L(list):\n    def __eq__(self, o): return True\ndef add(a, b):\n    return L()\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, tr := judged(t, code, addTests())
			requirePassed(t, tr, false, false, false)
		})
	}
}

// os._exit before the tests, at the top level, or inside the function.
func TestHarnessAdversarialExit(t *testing.T) {
	_, tr := judged(t, "import os\n"+honestAdd+"os._exit(0)\n", addTests())
	requirePassed(t, tr, false, false, false)
	requireDetail(t, tr, 0, "not run: the program exited with code 0 before the tests ran")

	_, tr = judged(t, "import sys\n"+honestAdd+"if __name__ == '__main__':\n    sys.exit(0)\n", addTests())
	requirePassed(t, tr, false, false, false)
	requireDetail(t, tr, 2, "before the tests ran")

	r, tr := judged(t, "import os\ndef add(a, b):\n    if a < 0:\n        os._exit(7)\n    return a + b\n", addTests())
	requirePassed(t, tr, true, false, false)
	requireDetail(t, tr, 1, "failed: the program exited with code 7 while this case ran")
	requireDetail(t, tr, 2, "not run: the program exited with code 7 during 'negative'")
	if r.jail.ExitCode != 7 {
		t.Errorf("exit %+v", r.jail)
	}

	_, tr = judged(t, "import os, signal\ndef add(a, b):\n    if a < 0:\n        os.kill(os.getpid(), signal.SIGKILL)\n    return a + b\n", addTests())
	requirePassed(t, tr, true, false, false)
	requireDetail(t, tr, 1, "died of signal SIGKILL while this case ran")

	// sys.exit in the function is an exception like any other: the other cases go on.
	_, tr = judged(t, "import sys\ndef add(a, b):\n    if a < 0:\n        sys.exit(0)\n    return a + b\n", addTests())
	requirePassed(t, tr, true, false, true)
	requireDetail(t, tr, 1, "expected -3, but the call raised SystemExit: 0")
}

// A program that patches json, sys, os and builtins, or the harness's own
// helpers, can at most break its own report: its cases fail. No record
// field but the observations counts ("passed": true means nothing).
func TestHarnessAdversarialMonkeypatch(t *testing.T) {
	for name, patch := range map[string]string{
		"json": `
import json, json.encoder
json.dumps = lambda *a, **k: "true"
json.loads = lambda *a, **k: {}
json.JSONEncoder.encode = lambda self, o: "true"
json.JSONEncoder.iterencode = lambda self, o, _one_shot=False: ["true"]
json.encoder.c_make_encoder = None
json.encoder.encode_basestring_ascii = lambda s: '"OK"'
import _json
_json.make_encoder = lambda *a: (lambda o, level: ["true"])
_json.encode_basestring_ascii = lambda s: '"OK"'
_json.make_scanner = None
`,
		"sys and os": `
import sys, os
_w = os.write
os.write = lambda fd, b: _w(fd, b.replace(b'"value":', b'"passed":true,"value":'))
os.getpid = lambda: 12345
sys.exit = lambda *a: None
sys.excepthook = lambda *a: None
sys.modules["json"] = None
`,
		"builtins": `
import builtins
builtins.repr = lambda o: "3"
builtins.str = lambda o="": "3"
builtins.isinstance = lambda o, c: True
builtins.len = lambda o: 0
builtins.callable = lambda o: True
builtins.type = lambda o: int
`,
		"the harness's helpers": `
import gc, sys
for o in gc.get_objects():
    if type(o).__name__ == "Harness":
        o.send = lambda line, _s=o.send: _s(line.replace('"type":"int"', '"type":"int","passed":true'))
        type(o).returned = lambda self, i, ms, r: '{"t":"case","i":%d,"ms":0,"type":"int","value":"PASS"}' % i
    if type(o) is dict and "_str" in o and "Harness" in o:
        o["_str"] = lambda x: "OK"
        o["_typename"] = lambda x: "int"
`,
		"the harness's frames": `
import sys
def add(a, b):
    f = sys._getframe(1)
    while f is not None:
        for k in list(f.f_globals):
            if k.startswith("_") and callable(f.f_globals[k]) and f.f_globals is not globals():
                f.f_globals[k] = lambda *a, **k: '{"t":"case","i":0,"ms":0,"type":"int","value":"OK"}'
        f = f.f_back
    return a - b
`,
	} {
		t.Run(name, func(t *testing.T) {
			if strings.Contains(patch, "def add") {
				_, tr := judged(t, patch, addTests())
				requirePassed(t, tr, false, false, false)
				return
			}
			_, tr := judged(t, patch+wrongAdd, addTests())
			requirePassed(t, tr, false, false, false)
			if name == "the harness's helpers" {
				return
			}
			// The harness took what it uses before the program ran: an
			// honest function still passes, as it would without the patches.
			_, tr = judged(t, patch+honestAdd, addTests())
			requirePassed(t, tr, true, true, true)
		})
	}
}

// Closing fd 3, or putting something else there, loses the report.
func TestHarnessAdversarialChannel(t *testing.T) {
	for name, code := range map[string]string{
		"closed":           "import os\nos.close(3)\n" + honestAdd,
		"dup2 stdout":      "import os\nos.dup2(1, 3)\n" + honestAdd,
		"dup2 /dev/null":   "import os\nos.dup2(os.open('/dev/null', os.O_WRONLY), 3)\n" + honestAdd,
		"closed in a case": "import os\ndef add(a, b):\n    if a < 0:\n        os.close(3)\n    return a + b\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, tr := judged(t, code, addTests())
			want := []bool{false, false, false}
			if name == "closed in a case" {
				want[0] = true
			}
			requirePassed(t, tr, want...)
		})
	}
}

// Any BaseException a call raises is reported and fails the case (unless
// it was expected), and the other cases run; one at the top level stops
// the tests before they run.
func TestHarnessAdversarialBaseExceptions(t *testing.T) {
	code := `
import sys
class Boom(BaseException):
    pass
class Weird(Exception):
    def __str__(self):
        raise Boom("no message")
def add(a, b):
    if a == 1:
        raise Boom("boom")
    if a == -5:
        raise KeyboardInterrupt
    raise Weird()
`
	r, tr := judged(t, code, addTests())
	requirePassed(t, tr, false, false, false)
	requireDetail(t, tr, 0, "raised Boom: boom (line 10)")
	requireDetail(t, tr, 1, "raised KeyboardInterrupt")
	requireDetail(t, tr, 2, "raised Weird")
	if r.jail.Status != nsjail.StatusOK {
		t.Errorf("the program did not end well: %+v\n%s", r.jail, r.stderr)
	}

	exits := &Tests{Function: "stop", Cases: []TestCase{
		{Name: "exit", Args: rawArgs(`0`), ExpectedException: "SystemExit"},
		{Name: "base", Args: rawArgs(`1`), ExpectedException: "BaseException"},
		{Name: "not an Exception", Args: rawArgs(`2`), ExpectedException: "Exception"},
		{Name: "nothing raised", Args: rawArgs(`3`), ExpectedException: "ValueError"},
	}}
	_, tr = judged(t, "import sys\ndef stop(n):\n    if n < 3:\n        sys.exit(n)\n    return n\n", exits)
	requirePassed(t, tr, true, true, false, false)
	requireDetail(t, tr, 2, "expected Exception, got SystemExit: 2")
	requireDetail(t, tr, 3, "expected ValueError to be raised, but the call returned 3")

	r, tr = judged(t, "class Boom(BaseException):\n    pass\n"+honestAdd+"raise Boom('at the top')\n", addTests())
	requirePassed(t, tr, false, false, false)
	requireDetail(t, tr, 0, "not run: the program raised Boom at line 5 before the tests ran")
	e := ParseReport(r.report, r.truncated, addTests()).UncaughtException(r.jail)
	if e == nil || e.Type != "Boom" || e.Line != 5 || e.Message != "at the top" || !strings.HasPrefix(r.stderr, e.Traceback) {
		t.Errorf("exception %+v, stderr %q", e, r.stderr)
	}
}

// Recursion: a RecursionError in a case is reported and the next case runs;
// a recursion limit so low that the harness cannot report loses the report.
func TestHarnessAdversarialRecursion(t *testing.T) {
	code := "def add(a, b):\n    if a == 1:\n        return add(a, b)\n    return a + b\n"
	_, tr := judged(t, code, addTests())
	requirePassed(t, tr, false, true, true)
	requireDetail(t, tr, 0, "RecursionError: maximum recursion depth exceeded")

	_, tr = judged(t, "import sys\nsys.setrecursionlimit(12)\n"+wrongAdd, addTests())
	requirePassed(t, tr, false, false, false)
}

// Values with no JSON form, or too large or deep for it, are reported by
// their repr and fail an expected value; their type still counts.
func TestHarnessAdversarialValues(t *testing.T) {
	code := `
def value(kind):
    if kind == "generator":
        return (x for x in [1, 2])
    if kind == "huge":
        return "x" * (2 << 20)
    if kind == "cyclic":
        l = [1]
        l.append(l)
        return l
    if kind == "deep":
        v = []
        for _ in range(100000):
            v = [v]
        return v
    if kind == "nan":
        return float("nan")
    if kind == "set":
        return {1, 2}
    if kind == "tuple":
        return (1, [2, (3,)])
    if kind == "int keys":
        return {1: "a"}
    if kind == "bigint":
        return 2**64 + 1
    if kind == "bad repr":
        class R:
            def __repr__(self):
                raise SystemExit(9)
        return R()
`
	tests := &Tests{Function: "value", Cases: []TestCase{
		{Name: "generator", Args: rawArgs(`"generator"`), Expected: json.RawMessage(`[1, 2]`)},
		{Name: "huge", Args: rawArgs(`"huge"`), Expected: json.RawMessage(`"x"`)},
		{Name: "cyclic", Args: rawArgs(`"cyclic"`), Expected: json.RawMessage(`[1, []]`)},
		{Name: "deep", Args: rawArgs(`"deep"`), Expected: json.RawMessage(`[]`)},
		{Name: "nan", Args: rawArgs(`"nan"`), Expected: json.RawMessage(`0`)},
		{Name: "set", Args: rawArgs(`"set"`), Expected: json.RawMessage(`[1, 2]`)},
		{Name: "set type", Args: rawArgs(`"set"`), ExpectedType: "set"},
		{Name: "tuple", Args: rawArgs(`"tuple"`), Expected: json.RawMessage(`[1, [2, [3]]]`), ExpectedType: "tuple"},
		{Name: "int keys", Args: rawArgs(`"int keys"`), Expected: json.RawMessage(`{"1": "a"}`)},
		{Name: "bigint", Args: rawArgs(`"bigint"`), Expected: json.RawMessage(`18446744073709551617`)},
		{Name: "bigint as float", Args: rawArgs(`"bigint"`), Expected: json.RawMessage(`1.8446744073709552e19`)},
		{Name: "bad repr", Args: rawArgs(`"bad repr"`), Expected: json.RawMessage(`null`)},
	}}
	r, tr := judged(t, code, tests)
	requirePassed(t, tr, false, false, false, false, false, false, true, true, true, true, false, false)
	requireDetail(t, tr, 0, "generator object")
	requireDetail(t, tr, 0, "no JSON form (Object of type generator is not JSON serializable)")
	requireDetail(t, tr, 1, "more than the 1048576 the harness reports")
	requireDetail(t, tr, 2, "Circular reference detected")
	requireDetail(t, tr, 3, "of type list, which has no JSON form")
	requireDetail(t, tr, 4, "nan")
	requireDetail(t, tr, 11, "<R object>")
	if tr.Results[5].Output != "{1, 2}" || tr.Results[7].Output != "[1, [2, [3]]]" {
		t.Errorf("outputs %q %q", tr.Results[5].Output, tr.Results[7].Output)
	}
	if r.jail.Status != nsjail.StatusOK {
		t.Errorf("%+v %s", r.jail, r.stderr)
	}
}
