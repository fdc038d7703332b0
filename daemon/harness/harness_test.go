package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentjail/internal/systest"
	"agentjail/nsjail"
)

// These tests run the harness on the host, without a jail: python3 -I -u on
// the entry in a temporary directory laid out like /code (passed as the
// harness's one argument, which only tests give), a pipe as fd 3.

const python = nsjail.DefaultPython

var (
	repeated = regexp.MustCompile(`repeated \d+ more`)
	update   = flag.Bool("update", false, "rebuild harness.bin")
)

// run is what one python3 process did.
type run struct {
	stdout, stderr string
	jail           *nsjail.Result // status, exit code and signal only
	report         []byte
	truncated      bool
	ws             string // its working directory
}

// layout writes what Program returns into a new directory standing for /code.
func layout(t *testing.T, code []byte, tests *Tests) string {
	t.Helper()
	dir := t.TempDir()
	program, name, files := Program(code, tests)
	files = append(files, nsjail.File{Path: name, Content: program})
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Path), f.Content, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runHarness runs the harness on code (and tests) and reads its report.
func runHarness(t *testing.T, code string, tests *Tests, stdin string) *run {
	t.Helper()
	dir := layout(t, []byte(code), tests)
	return runPython(t, []string{filepath.Join(dir, harnessName), dir}, stdin, true)
}

// runPlain runs main.py of dir the way the jail would without a harness.
func runPlain(t *testing.T, dir, stdin string) *run {
	t.Helper()
	return runPython(t, []string{filepath.Join(dir, mainName)}, stdin, false)
}

func runPython(t *testing.T, args []string, stdin string, channel bool) *run {
	t.Helper()
	return runPythonIn(t, t.TempDir(), nil, args, stdin, channel)
}

// runPythonIn is runPython in the workspace ws (its working directory),
// with env added to its environment.
func runPythonIn(t *testing.T, ws string, env, args []string, stdin string, channel bool) *run {
	t.Helper()
	systest.Require(t, systest.Python)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, append([]string{"-I", "-u"}, args...)...)
	cmd.Dir = ws
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + ws, "LANG=C.UTF-8"}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	r := &run{ws: ws}
	var done chan struct{}
	if channel {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer pr.Close()
		cmd.ExtraFiles = []*os.File{pw} // fd 3
		done = make(chan struct{})
		go func() {
			defer close(done)
			b, _ := io.ReadAll(io.LimitReader(pr, maxReportBytes))
			r.report = b
			n, _ := io.Copy(io.Discard, pr)
			r.truncated = n > 0
		}()
		err = cmd.Start()
		pw.Close()
		if err != nil {
			t.Fatal(err)
		}
	} else if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if done != nil {
		<-done
	}
	if ctx.Err() != nil {
		t.Fatalf("python did not end: %v", ctx.Err())
	}
	r.stdout, r.stderr = stdout.String(), stderr.String()
	r.jail = &nsjail.Result{Status: nsjail.StatusOK}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			r.jail.Status, r.jail.Signal, r.jail.ExitCode = nsjail.StatusSignaled, ws.Signal(), 128+int(ws.Signal())
		} else {
			r.jail.Status, r.jail.ExitCode = nsjail.StatusError, ws.ExitStatus()
		}
	case err != nil:
		t.Fatal(err)
	}
	return r
}

// The corpus: ordinary programs behave under the harness exactly as under
// plain python3 -I -u: same stdout, stderr and exit status (and sys.path,
// but for the working directory first on it).
func TestHarnessCorpusSameAsPlainPython(t *testing.T) {
	systest.Require(t, systest.Python)
	progs, err := filepath.Glob("testdata/corpus/*.py")
	if err != nil || len(progs) < 30 {
		t.Fatalf("corpus: %v, %d programs", err, len(progs))
	}
	for _, p := range progs {
		name := strings.TrimSuffix(filepath.Base(p), ".py")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			stdin, _ := os.ReadFile(strings.TrimSuffix(p, ".py") + ".stdin")
			dir := layout(t, code, nil)
			h := runPython(t, []string{filepath.Join(dir, harnessName), dir}, string(stdin), true)
			plain := runPlain(t, dir, string(stdin))
			// The one difference: the harness puts the working directory
			// (the request's files) first on sys.path (harness.py's _importable).
			h.stdout = strings.Replace(h.stdout, "['"+h.ws+"', ", "[", 1)
			if h.stdout != plain.stdout {
				t.Errorf("stdout differs\nharness:\n%s\nplain:\n%s", h.stdout, plain.stdout)
			}
			printed := h.stderr
			if name == "recursion" { // the harness's frames take 5 levels of the recursion limit (harness.go)
				h.stderr = repeated.ReplaceAllString(h.stderr, "repeated N more")
				plain.stderr = repeated.ReplaceAllString(plain.stderr, "repeated N more")
			}
			if h.stderr != plain.stderr {
				t.Errorf("stderr differs\nharness:\n%s\nplain:\n%s", h.stderr, plain.stderr)
			}
			if h.jail.Status != plain.jail.Status || h.jail.ExitCode != plain.jail.ExitCode || h.jail.Signal != plain.jail.Signal {
				t.Errorf("exit differs: harness %+v, plain %+v", *h.jail, *plain.jail)
			}
			rep := ParseReport(h.report, h.truncated, nil)
			if e := rep.UncaughtException(h.jail); e != nil && !strings.HasPrefix(name, "excepthook") && !strings.Contains(printed, e.Traceback) {
				t.Errorf("the reported traceback is not the one printed:\n%s", e.Traceback)
			}
			if strings.Contains(h.stderr, harnessName) || strings.Contains(h.stderr, harnessLibName) {
				t.Errorf("the harness shows in stderr:\n%s", h.stderr)
			}
		})
	}
}

// harness.bin must be the code of the sources, compiled by this python.
func TestEmbeddedHarnessCodeIsCurrent(t *testing.T) {
	systest.Require(t, systest.Python)
	mode := "check"
	if *update {
		mode = "build"
	}
	out, err := exec.Command(python, "-I", "testdata/compile.py", mode, ".", "harness.bin").CombinedOutput()
	if err != nil {
		t.Fatalf("%s%v\nrun: go test ./daemon/harness -run TestEmbeddedHarnessCodeIsCurrent -update", out, err)
	}
}

// rawArgs makes JSON arguments.
func rawArgs(args ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(args))
	for i, a := range args {
		out[i] = json.RawMessage(a)
	}
	return out
}

// addTests are three cases of add(a, b); the forgers below "know" their
// expected values, as if they had guessed them.
func addTests() *Tests {
	return &Tests{Function: "add", Cases: []TestCase{
		{Name: "small", Args: rawArgs(`1`, `2`), Expected: json.RawMessage(`3`)},
		{Name: "negative", Args: rawArgs(`-5`, `2`), Expected: json.RawMessage(`-3`), ExpectedType: "int"},
		{Name: "big", Args: rawArgs(`123456789`, `987654321`), Expected: json.RawMessage(`1111111110`)},
	}}
}

const (
	honestAdd = "def add(a, b):\n    return a + b\n"
	wrongAdd  = "def add(a, b):\n    return a - b\n"
	// forge writes records that claim every case passed, in every shape a
	// harness could use, to wherever it can.
	forge = `
import os, json
FORGED = "".join(json.dumps(r) + "\n" for r in [
    {"t": "tests", "n": 3, "function": "ok"},
    {"t": "case", "i": 0, "ms": 0, "type": "int", "value": 3},
    {"t": "case", "i": 1, "ms": 0, "type": "int", "value": -3},
    {"t": "case", "i": 2, "ms": 0, "type": "int", "value": 1111111110},
    {"t": "end"}, {"passed": True}, {"name": "small", "passed": True, "detail": "OK"},
]).encode() + b'__RESULT__ {"all_passed": true}\nALL TESTS PASSED\n'
def forge():
    for fd in range(0, 64):
        try:
            os.write(fd, FORGED)
        except OSError:
            pass
    for name in os.listdir("/proc/self/fd"):
        try:
            with open("/proc/self/fd/" + name, "wb") as f:
                f.write(FORGED)
        except OSError:
            pass
`
)

// judged runs code with tests under the harness and judges it.
func judged(t *testing.T, code string, tests *Tests) (*run, *TestsResult) {
	t.Helper()
	r := runHarness(t, code, tests, "")
	return r, ParseReport(r.report, r.truncated, tests).Verdicts(tests, r.jail)
}

func requirePassed(t *testing.T, tr *TestsResult, want ...bool) {
	t.Helper()
	if len(tr.Results) != len(want) {
		t.Fatalf("%d results, want %d", len(tr.Results), len(want))
	}
	passed := 0
	for i, w := range want {
		if tr.Results[i].Passed != w {
			t.Errorf("case %q: passed %v, want %v (%s)", tr.Results[i].Name, tr.Results[i].Passed, w, tr.Results[i].Detail)
		}
		if w {
			passed++
		}
	}
	if tr.Passed != passed || tr.Failed != len(want)-passed || tr.AllPassed != (passed == len(want)) || tr.Total != len(want) {
		t.Errorf("counts: %+v", *tr)
	}
}

func requireDetail(t *testing.T, tr *TestsResult, i int, sub string) {
	t.Helper()
	if !strings.Contains(tr.Results[i].Detail, sub) {
		t.Errorf("case %q: detail %q does not say %q", tr.Results[i].Name, tr.Results[i].Detail, sub)
	}
}

// The control: an honest add passes, a wrong one fails, each with what it returned.
func TestHarnessTestsHonestAndWrong(t *testing.T) {
	r, tr := judged(t, honestAdd+"print('module ran')\n", addTests())
	requirePassed(t, tr, true, true, true)
	if tr.Results[0].Output != "3" || tr.Results[0].Detail != "OK" || r.stdout != "module ran\n" || r.jail.Status != nsjail.StatusOK {
		t.Errorf("honest: %+v, stdout %q, %+v", tr.Results[0], r.stdout, r.jail)
	}
	_, tr = judged(t, wrongAdd, addTests())
	requirePassed(t, tr, false, false, false)
	requireDetail(t, tr, 0, "expected 3, got -1")
	if tr.Results[0].Output != "-1" {
		t.Errorf("output %q", tr.Results[0].Output)
	}
}

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

// What the harness cuts (in characters) the daemon does not refuse (it
// bounds in bytes): a long non-ASCII message, a hierarchy deeper than
// maxMRO, and a long non-ASCII traceback, whose end is kept.
func TestHarnessLongRealExceptionsPass(t *testing.T) {
	code := `
class E0(ValueError): pass
` + func() string {
		var b strings.Builder
		for i := 1; i <= 40; i++ {
			fmt.Fprintf(&b, "class E%d(E%d): pass\n", i, i-1)
		}
		return b.String()
	}() + `
def f(kind):
    if kind == "message":
        raise ValueError("é" * 3000)
    raise E40("deep")
`
	tests := &Tests{Function: "f", Cases: []TestCase{
		{Name: "message", Args: rawArgs(`"message"`), ExpectedException: "ValueError"},
		{Name: "deep", Args: rawArgs(`"deep"`), ExpectedException: "ValueError"},
		{Name: "deep-own", Args: rawArgs(`"deep"`), ExpectedException: "E40"},
		{Name: "deep-cut", Args: rawArgs(`"deep"`), ExpectedException: "E35"}, // one of the nearest bases, beyond the 32 classes sent
	}}
	_, tr := judged(t, code, tests)
	requirePassed(t, tr, true, true, true, false)

	// The cause comes first in the traceback: 50,000 é, 100 KB of UTF-8.
	r := runHarness(t, "raise RuntimeError('the end é') from ValueError('é' * 50000)\n", nil, "")
	exc := ParseReport(r.report, r.truncated, nil).UncaughtException(r.jail)
	if exc == nil || len(exc.Traceback) > maxReportTraceback+64 || !strings.HasSuffix(strings.TrimSpace(exc.Traceback), "RuntimeError: the end é") {
		t.Errorf("traceback: %v", exc)
	}
}

// An async def function is awaited: its verdicts are those of what the
// coroutine returns (and raises), each case in its own event loop.
func TestHarnessTestsAsyncFunction(t *testing.T) {
	code := "import asyncio\nasync def add(a, b):\n    await asyncio.sleep(0)\n    if a < 0:\n        raise ValueError('negative')\n    return a + b\n"
	_, tr := judged(t, code, addTests())
	requirePassed(t, tr, true, false, true)
	if tr.Results[0].Output != "3" {
		t.Errorf("output %q", tr.Results[0].Output)
	}
	if !strings.Contains(tr.Results[1].Detail, "ValueError") {
		t.Errorf("detail %q", tr.Results[1].Detail)
	}
}

// The function may print; its output goes where the program's goes.
func TestHarnessTestsOutputAndStdin(t *testing.T) {
	code := "import sys\nprint('top')\ndef add(a, b):\n    print('adding', a, b)\n    print('err', file=sys.stderr)\n    return a + b\n"
	r, tr := judged(t, code, addTests())
	requirePassed(t, tr, true, true, true)
	if r.stdout != "top\nadding 1 2\nadding -5 2\nadding 123456789 987654321\n" || r.stderr != "err\nerr\nerr\n" {
		t.Errorf("stdout %q stderr %q", r.stdout, r.stderr)
	}
}

// A case reported twice fails, even when right.
func TestHarnessAdversarialDuplicate(t *testing.T) {
	code := `
import os
def add(a, b):
    os.write(3, b'{"t":"case","i":0,"ms":0,"type":"int","value":3}\n')
    return a + b
`
	_, tr := judged(t, code, addTests())
	requirePassed(t, tr, false, true, true)
	requireDetail(t, tr, 0, "more than once")
}

// A process the program forks runs the rest of the harness too, and is
// silent; a program it execs never holds fd 3, even when the program lets
// it inherit every inheritable fd.
func TestHarnessChildrenCannotReport(t *testing.T) {
	_, tr := judged(t, "import os\nos.fork()\n"+honestAdd, addTests())
	requirePassed(t, tr, true, true, true)

	code := `
import subprocess, sys
r = subprocess.run([sys.executable, "-c", "import os; os.write(3, b'{\"t\":\"case\",\"i\":0,\"ms\":0,\"type\":\"int\",\"value\":3}\\n')"],
                   capture_output=True, text=True, close_fds=False)  # what would be inherited is
print(r.returncode, "Bad file descriptor" in r.stderr)
` + honestAdd
	r, tr := judged(t, code, addTests())
	requirePassed(t, tr, true, true, true)
	if r.stdout != "1 True\n" {
		t.Errorf("the child could write to fd 3: %q", r.stdout)
	}
}

// tests.json holds what the calls need and nothing else: no expected
// value, type or exception, no case name.
func TestHarnessTestsHoldNoExpectedValues(t *testing.T) {
	tests := &Tests{Function: "leak", Cases: []TestCase{
		{Name: "name-SECRET1", Args: rawArgs(`1`), Expected: json.RawMessage(`"SECRET2"`)},
		{Name: "typed", Args: rawArgs(`2`), ExpectedType: "SECRET3"},
		{Name: "raises", Kwargs: map[string]json.RawMessage{"x": json.RawMessage(`3`)}, ExpectedException: "SECRET4"},
	}}
	_, _, files := Program([]byte("pass"), tests)
	for _, f := range files {
		if bytes.Contains(f.Content, []byte("SECRET")) {
			t.Errorf("%s holds an expected value or a case name: %s", f.Path, f.Content)
		}
	}
	code := "def leak(*a, **k):\n    return open(__file__.replace('main.py', 'tests.json')).read()\n"
	_, tr := judged(t, code, tests)
	requirePassed(t, tr, false, false, false)
	want := `"{\"function\":\"leak\",\"cases\":[{\"args\":[1],\"kwargs\":{}},{\"args\":[2],\"kwargs\":{}},{\"args\":[],\"kwargs\":{\"x\":3}}]}"`
	if tr.Results[0].Output != want {
		t.Errorf("tests.json as the program reads it:\n%s\nwant\n%s", tr.Results[0].Output, want)
	}
}

// The program's own failures before the tests.
func TestHarnessTestsNotRun(t *testing.T) {
	r, tr := judged(t, "x = undefined_name\n"+honestAdd, addTests())
	requirePassed(t, tr, false, false, false)
	requireDetail(t, tr, 0, "not run: the program raised NameError at line 1 before the tests ran")
	if r.jail.ExitCode != 1 || !strings.Contains(r.stderr, "NameError: name 'undefined_name' is not defined") {
		t.Errorf("%+v %q", r.jail, r.stderr)
	}

	_, tr = judged(t, "def add(a, b)\n    return a + b\n", addTests())
	requireDetail(t, tr, 0, "not run: the program raised SyntaxError at line 1 before the tests ran")

	_, tr = judged(t, "def plus(a, b):\n    return a + b\n", addTests())
	requirePassed(t, tr, false, false, false)
	requireDetail(t, tr, 1, "not run: the program defines no function named 'add'")

	_, tr = judged(t, "add = 3\n", addTests())
	requireDetail(t, tr, 2, "not run: 'add' is an object of type int, not a function")
}

// A report past maxReportBytes is cut; the cases past the cut fail.
func TestHarnessReportCut(t *testing.T) {
	tests := &Tests{Function: "big"}
	for i := 0; i < 20; i++ {
		tests.Cases = append(tests.Cases, TestCase{Args: rawArgs(strconv.Itoa(i)), ExpectedType: "str"})
	}
	r, tr := judged(t, "def big(i):\n    return 'x' * 1000000\n", tests)
	if !r.truncated || tr.Passed < 10 || tr.Passed > 16 {
		t.Fatalf("truncated %v, %d passed", r.truncated, tr.Passed)
	}
	requireDetail(t, tr, 19, "not reported: the harness's report passed its limit of 16.0 MiB")
}

// Parts of the harness a run cannot show: harness.py's _compile gives the
// code compile() gives (and takes the fast path); harness_lib.py's JSON,
// done without the json package, is json.dumps's and json.loads's.
func TestHarnessInternals(t *testing.T) {
	systest.Require(t, systest.Python)
	stdlib, _ := filepath.Glob("/usr/lib/python3*/*.py")
	corpus, _ := filepath.Glob("testdata/corpus/*.py")
	if len(stdlib) < 100 || len(corpus) < 30 {
		t.Fatalf("%d stdlib files, %d corpus files", len(stdlib), len(corpus))
	}
	for _, args := range [][]string{
		append(append([]string{"fast", "."}, corpus...), stdlib[:100]...),
		{"json", "."},
	} {
		out, err := exec.Command(python, append([]string{"-I", "testdata/compile.py"}, args...)...).CombinedOutput()
		if err != nil {
			t.Errorf("%s: %s%v", args[0], out, err)
		}
	}
}

// Without harness.bin, or with one for another python, boot.py compiles
// the sources, and the harness does the same.
func TestHarnessWithoutCompiledCode(t *testing.T) {
	systest.Require(t, systest.Python)
	programs := []string{
		"import sys\nprint('out', sys.argv)\ndef add(a, b):\n    return a + b\n",
		"def add(a, b):\n    return a - b\n1/0\n",
		"def add(a, b):\n    raise ValueError('no')\n",
	}
	judge := func(dir string) (*run, string) {
		r := runPython(t, []string{filepath.Join(dir, harnessName), dir}, "", true)
		tr := ParseReport(r.report, r.truncated, addTests()).Verdicts(addTests(), r.jail)
		for i := range tr.Results {
			tr.Results[i].DurationMs = 0
		}
		r.stdout = strings.ReplaceAll(r.stdout, dir, "DIR")
		r.stderr = strings.ReplaceAll(r.stderr, dir, "DIR")
		return r, fmt.Sprintf("%+v", *tr)
	}
	// Which code ran shows in the name of the frame below the program's.
	whose := "import sys\nprint(sys._getframe(1).f_code.co_filename)\n"
	for _, variant := range []string{"missing", "other python"} {
		for i, src := range append(programs, whose) {
			with := layout(t, []byte(src), addTests())
			without := layout(t, []byte(src), addTests())
			bin := filepath.Join(without, harnessBinName)
			if err := os.Chmod(bin, 0o644); err != nil {
				t.Fatal(err)
			}
			if variant == "missing" {
				err := os.Remove(bin)
				if err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(bin, append([]byte{0, 0, '\r', '\n'}, harnessBin[4:]...), 0o444); err != nil {
				t.Fatal(err)
			}
			want, wantTr := judge(with)
			got, gotTr := judge(without)
			if src == whose {
				if want.stdout != "/code/"+harnessRunName+"\n" || got.stdout != "DIR/"+harnessRunName+"\n" {
					t.Errorf("%s: the harness's code came from %q with harness.bin, %q without", variant, want.stdout, got.stdout)
				}
				continue
			}
			if got.stdout != want.stdout || got.stderr != want.stderr || fmt.Sprint(*got.jail) != fmt.Sprint(*want.jail) || gotTr != wantTr {
				t.Errorf("%s, program %d:\n%+v\n%s\nwith harness.bin:\n%+v\n%s", variant, i, got, gotTr, want, wantTr)
			}
		}
	}
}

// Every request's /code holds the prepared files with the same bytes: a
// prepared jail (nsjail.PreparedTemplate) fits every daemon request.
func TestHarnessSharedFitsEveryRequest(t *testing.T) {
	for _, tests := range []*Tests{nil, addTests()} {
		prog, name, files := Program([]byte("pass"), tests)
		all := append([]nsjail.File{{Path: name, Content: prog}}, files...)
		for _, sh := range SharedFiles() {
			i := slices.IndexFunc(all, func(f nsjail.File) bool { return f.Path == sh.Path })
			if i < 0 || !bytes.Equal(all[i].Content, sh.Content) {
				t.Errorf("%s: not in the request's /code with the same content", sh.Path)
			}
		}
	}
}
