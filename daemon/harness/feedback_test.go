package harness

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/nsjail"
	"agentjail/seccomp"
)

func TestProgramFeedback(t *testing.T) {
	if fb := ProgramFeedback(nil, nil, nil, nil); fb == nil || len(fb) != 0 {
		t.Errorf("%#v", fb)
	}
	fb := ProgramFeedback(&Exception{Type: "ZeroDivisionError", Message: "division by zero", Line: 3}, nil, nil, nil)
	if len(fb) != 1 || fb[0] != "The program raised ZeroDivisionError at line 3: division by zero. A division or modulo by zero: guard against a zero divisor." {
		t.Errorf("%q", fb)
	}
	fb = ProgramFeedback(&Exception{Type: "ModuleNotFoundError", Message: "No module named 'numpy'", Line: 1}, nil, nil, nil)
	if !strings.Contains(fb[0], "'numpy' is not installed in the sandbox's environment") {
		t.Errorf("%q", fb)
	}
	fb = ProgramFeedback(&Exception{Type: "SyntaxError", Message: "'(' was never closed", Line: 2}, nil, nil, nil)
	if !strings.HasPrefix(fb[0], "The code does not compile: SyntaxError at line 2: '(' was never closed. Fix the syntax") {
		t.Errorf("%q", fb)
	}
	for _, name := range []string{"NameError", "TypeError", "IndexError", "KeyError", "AttributeError", "RecursionError", "ValueError", "IndentationError", "json.decoder.JSONDecodeError"} {
		if s := exceptionSentence(&Exception{Type: name}, nil); !strings.HasPrefix(s, "The ") || len(strings.Split(s, ". ")) < 2 {
			t.Errorf("no hint for %s: %q", name, s)
		}
	}

	// 1000 failing cases make a handful of sentences, with their calls.
	tests := &Tests{Function: "add"}
	for i := 0; i < maxTestCases; i++ {
		tests.Cases = append(tests.Cases, TestCase{Args: rawArgs(fmt.Sprint(i), `null`, `[true, {"k": "v"}]`), Kwargs: map[string]json.RawMessage{"z": json.RawMessage(`false`)}, Expected: json.RawMessage(fmt.Sprint(i + 1))})
	}
	lines := []string{fmt.Sprintf(started, len(tests.Cases))}
	for i := range tests.Cases {
		if i < 990 {
			lines = append(lines, fmt.Sprintf(`{"t":"case","i":%d,"ms":0,"type":"int","value":%d}`, i, i))
		}
	}
	tr := ParseReport(report(lines...), false, tests).Verdicts(tests, &nsjail.Result{Status: nsjail.StatusKilled, KillReason: nsjail.KillCPUTimeout})
	fb = ProgramFeedback(nil, tr, tests, nil)
	want := []string{
		"1000 of 1000 tests failed.",
		`Test 'case 1' (add(0, None, [True, {"k": "v"}], z=False)) failed: expected 1, got 0.`,
	}
	if len(fb) != 1+maxFeedbackFail+2 || fb[0] != want[0] || fb[1] != want[1] ||
		fb[6] != "986 more failed tests are not listed here." ||
		!strings.HasPrefix(fb[7], "9 tests did not run: the program was killed (cpu_timeout) during 'case 991'.") {
		t.Errorf("%d sentences:\n%s", len(fb), strings.Join(fb, "\n"))
	}

	// None ran: one sentence, with a hint.
	tr = ParseReport(nil, false, tests).Verdicts(tests, exited0)
	fb = ProgramFeedback(nil, tr, tests, nil)
	if len(fb) != 1 || !strings.HasPrefix(fb[0], "None of the 1000 tests ran: the program exited with code 0 before the tests ran. The tests call the function after") {
		t.Errorf("%q", fb)
	}
	tr = ParseReport(report(`{"t":"tests","n":1000,"function":"missing"}`), false, tests).Verdicts(tests, exited0)
	if fb = ProgramFeedback(nil, tr, tests, nil); len(fb) != 1 || !strings.Contains(fb[0], "defines no function named 'add'. Define it at the top level") {
		t.Errorf("%q", fb)
	}

	// Every test passed: nothing to say.
	one := oneCase(TestCase{Expected: json.RawMessage(`1`)})
	tr = ParseReport(report(fmt.Sprintf(started, 1), `{"t":"case","i":0,"ms":0,"type":"int","value":1}`), false, one).Verdicts(one, exited0)
	if fb = ProgramFeedback(nil, tr, one, nil); len(fb) != 0 || !tr.AllPassed {
		t.Errorf("%q %+v", fb, tr)
	}
}

// Feedback quotes values as the caller wrote them (no HTML escapes), and a
// keyword that is no identifier the way the harness passes it.
func TestFeedbackNotation(t *testing.T) {
	c := &TestCase{Args: rawArgs(`"<b>&"`), Kwargs: map[string]json.RawMessage{"x": json.RawMessage(`[1, {"k": "<"}]`), "a-b": json.RawMessage(`true`)}}
	if got, want := pyCall("f", c), `f("<b>&", x=[1, {"k": "<"}], **{"a-b": True})`; got != want {
		t.Errorf("pyCall: %s, want %s", got, want)
	}
	if got := shortAny([]any{"<a>"}); got != `["<a>"]` {
		t.Errorf("shortAny: %s", got)
	}
}

func TestFeedbackNamesTheLimit(t *testing.T) {
	for reason, want := range map[nsjail.KillReason]string{
		nsjail.KillWallTimeout:   "wall-clock",
		nsjail.KillCPUTimeout:    "CPU time",
		nsjail.KillOutputLimit:   "output limit",
		nsjail.KillSeccomp:       "system call filter",
		nsjail.KillCancelled:     "cancelled",
		nsjail.KillShutdown:      "shutting down",
		nsjail.KillFileSizeLimit: "file size",
	} {
		fb := JailFeedback(&nsjail.Result{Status: nsjail.StatusKilled, KillReason: reason, WallTime: time.Second})
		require.NotEmpty(t, fb, reason)
		assert.Contains(t, fb[0], want, reason)
	}
	fb := JailFeedback(&nsjail.Result{Status: nsjail.StatusOK, PidsMaxHits: 3})
	require.Len(t, fb, 1)
	assert.Contains(t, fb[0], "process limit")
}

// A seccomp kill says which of its three causes it was: a foreign-ABI
// call, the budget of forbidden calls, or the first call under "kill".
func TestFeedbackNamesTheSeccompKill(t *testing.T) {
	kill := func(calls ...seccomp.CallCount) []string {
		rep := &seccomp.Report{Syscall: calls[0].Syscall, Number: calls[0].Number, ABI: calls[0].ABI, Calls: calls}
		return JailFeedback(&nsjail.Result{Status: nsjail.StatusKilled, KillReason: nsjail.KillSeccomp, Signal: 9, Seccomp: rep})
	}
	assert.Contains(t, kill(seccomp.CallCount{Number: 20, ABI: "i386", Count: 1})[0], "foreign ABI (i386, number 20)")
	assert.Contains(t, kill(seccomp.CallCount{Syscall: "unshare", Number: 272, Count: 1001})[0], "more than 1000 forbidden system calls (1001, the most frequent unshare)")
	assert.Contains(t, kill(seccomp.CallCount{Syscall: "ptrace", Number: 101, Count: 1})[0], "forbidden system call ptrace;")
}

// Issue 22: a full /workspace (ENOSPC) names the limit and its flag, as
// the memory kill does; so does a file past file_size_bytes (EFBIG).
func TestFeedbackNamesTheTmpLimit(t *testing.T) {
	fb := ProgramFeedback(&Exception{Type: "OSError", Message: "[Errno 28] No space left on device", Line: 2}, nil, nil, nil)
	require.Len(t, fb, 1)
	assert.Contains(t, fb[0], "The program raised OSError at line 2: [Errno 28] No space left on device.")
	assert.Contains(t, fb[0], "tmp_bytes limit (--tmp-size on the command line)")
	assert.Contains(t, fb[0], "4096 files")

	fb = ProgramFeedback(&Exception{Type: "OSError", Message: "[Errno 27] File too large", Line: 2}, nil, nil, nil)
	assert.Contains(t, fb[0], "file_size_bytes limit (--file-size on the command line)")

	// In a tested call: said once, however many cases hit it.
	tests := &Tests{Function: "save", Cases: []TestCase{{Args: rawArgs("1")}, {Args: rawArgs("2")}}}
	raised := `{"t":"case","i":%d,"ms":0,"raised":{"type":"OSError","mro":["OSError","Exception","BaseException"],"message":"[Errno 28] No space left on device: 'big'","line":2}}`
	tr := ParseReport(report(fmt.Sprintf(started, 2), fmt.Sprintf(raised, 0), fmt.Sprintf(raised, 1)), false, tests).Verdicts(tests, exited0)
	require.Equal(t, 2, tr.Failed, "%+v", tr)
	fb = ProgramFeedback(nil, tr, tests, nil)
	assert.Equal(t, 1, strings.Count(strings.Join(fb, "\n"), "--tmp-size"), "%q", fb)
}

// Issue 22: a NameError of a name the program never defined says that
// runs share no state, and points to sessions; another NameError does not.
func TestFeedbackNameErrorPointsToSessions(t *testing.T) {
	for msg, want := range map[string]bool{
		"name 'df' is not defined":                       true,
		"name 'dff' is not defined. Did you mean: 'df'?": true,
		"cannot access free variable 'x' where it is not associated with a value in enclosing scope": false,
	} {
		fb := ProgramFeedback(&Exception{Type: "NameError", Message: msg, Line: 1}, nil, nil, nil)
		require.Len(t, fb, 1)
		if want {
			assert.Contains(t, fb[0], "Runs share no state", msg)
			assert.Contains(t, fb[0], "POST /v1/sessions, agentjail session, client.session() in Python", msg)
		} else {
			assert.NotContains(t, fb[0], "Runs share no state", msg)
		}
	}
	fb := ProgramFeedback(&Exception{Type: "ValueError", Message: "name 'x' is not defined", Line: 1}, nil, nil, nil)
	assert.NotContains(t, fb[0], "Runs share no state", "only a NameError")
}

// A failed import says what is true of the environment: never "standard
// library only" where the environment has more.
func TestImportFeedbackSaysWhatIsTrue(t *testing.T) {
	sci := &Installed{Environment: "default", Packages: []string{"matplotlib", "numpy", "pandas"}}
	bare := &Installed{Environment: "plain"}
	cases := []struct {
		typ, msg string
		env      *Installed
		want     string
	}{
		{"ModuleNotFoundError", "No module named 'torch'", sci,
			"'torch' is not installed in environment 'default', which has the standard library and matplotlib, numpy, pandas. Nor is 'torch' among the files sent"},
		{"ModuleNotFoundError", "No module named 'numpy.fancy'", sci, "'numpy' is installed in environment 'default', but has no submodule 'numpy.fancy'"},
		{"ModuleNotFoundError", "No module named 'numpy'", bare, "Only the Python standard library is installed in environment 'plain'. Nor is 'numpy' among the files sent"},
		{"ImportError", "libblas.so.3: cannot open shared object file: No such file or directory", sci,
			"The module is installed in environment 'default', but a shared library it needs did not load"},
		{"ImportError", "cannot import name 'nothing' from 'numpy' (/usr/lib/python3/dist-packages/numpy/__init__.py)", sci, "'numpy' is installed, but has no 'nothing'"},
		{"RuntimeError", "x", sci, ""},
	}
	for _, c := range cases {
		fb := ProgramFeedback(&Exception{Type: c.typ, Message: c.msg, Line: 1}, nil, nil, c.env)
		if c.want == "" {
			if strings.Contains(fb[0], "installed") {
				t.Errorf("%s: %q", c.typ, fb[0])
			}
			continue
		}
		if !strings.Contains(fb[0], c.want) {
			t.Errorf("%s %q:\n got %q\nwant %q", c.typ, c.msg, fb[0], c.want)
		}
		if c.env == sci && strings.Contains(fb[0], "standard library is") {
			t.Errorf("standard library only, in an environment with packages: %q", fb[0])
		}
	}
	many := &Installed{Environment: "big"}
	for i := range 30 {
		many.Packages = append(many.Packages, fmt.Sprintf("p%02d", i))
	}
	fb := ProgramFeedback(&Exception{Type: "ModuleNotFoundError", Message: "No module named 'q'"}, nil, nil, many)
	if !strings.Contains(fb[0], "p19 and 10 more.") || strings.Contains(fb[0], "p20") {
		t.Errorf("%q", fb[0])
	}
}
