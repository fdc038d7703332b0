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
