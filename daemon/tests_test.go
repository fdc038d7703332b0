package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"agentjail/nsjail"
)

// These tests judge hand-written reports: no python needed.

var (
	exited0 = &nsjail.Result{Status: nsjail.StatusOK}
	exited1 = &nsjail.Result{Status: nsjail.StatusError, ExitCode: 1}
)

// report joins records into the bytes of a report channel.
func report(lines ...string) []byte { return []byte(strings.Join(lines, "\n") + "\n") }

const started = `{"t":"tests","n":%d,"function":"ok"}`

func oneCase(c TestCase) *Tests { return &Tests{Function: "f", Cases: []TestCase{c}} }

// verdict judges one case from one case record (its JSON after "i":0,).
func verdict(t *testing.T, c TestCase, rec string) TestResult {
	t.Helper()
	tests := oneCase(c)
	data := report(fmt.Sprintf(started, 1), `{"t":"case","i":0,`+rec, `{"t":"end"}`)
	return ParseReport(data, false, tests).Verdicts(tests, exited0).Results[0]
}

func TestValidate(t *testing.T) {
	ok := func() *Tests { return oneCase(TestCase{Args: rawArgs(`1`), Expected: json.RawMessage(`2`)}) }
	if err := ok().Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (*Tests)(nil).Validate(); err != nil {
		t.Fatal(err)
	}
	many := ok()
	for len(many.Cases) <= MaxTestCases {
		many.Cases = append(many.Cases, TestCase{Name: fmt.Sprint(len(many.Cases))})
	}
	for _, tc := range []struct {
		field  string
		mutate func(*Tests)
	}{
		{"tests.function", func(ts *Tests) { ts.Function = "" }},
		{"tests.function", func(ts *Tests) { ts.Function = "os.system" }},
		{"tests.function", func(ts *Tests) { ts.Function = "f()" }},
		{"tests.cases", func(ts *Tests) { ts.Cases = nil }},
		{"tests.cases", func(ts *Tests) { *ts = *many }},
		{"tests.cases[1].name", func(ts *Tests) { ts.Cases = append(ts.Cases, TestCase{Name: "case 1"}) }},
		{"tests.cases[1].name", func(ts *Tests) {
			ts.Cases = append(ts.Cases, TestCase{Name: "a"}, TestCase{Name: "a"})[:2]
			ts.Cases[0].Name = "a"
		}},
		{"tests.cases[0].name", func(ts *Tests) { ts.Cases[0].Name = strings.Repeat("n", MaxTestNameLen+1) }},
		{"tests.cases[0].name", func(ts *Tests) { ts.Cases[0].Name = "a\nb" }},
		{"tests.cases[0].args[1]", func(ts *Tests) { ts.Cases[0].Args = rawArgs(`1`, `{`) }},
		{"tests.cases[0].args[0]", func(ts *Tests) { ts.Cases[0].Args = []json.RawMessage{nil} }},
		{"tests.cases[0].kwargs.b", func(ts *Tests) {
			ts.Cases[0].Kwargs = map[string]json.RawMessage{"a": json.RawMessage(`1`), "b": json.RawMessage(`x`)}
		}},
		{"tests.cases[0].expected", func(ts *Tests) { ts.Cases[0].Expected = json.RawMessage(`[1,`) }},
		{"tests.cases[0].expected_type", func(ts *Tests) { ts.Cases[0].ExpectedType = "list[int]" }},
		{"tests.cases[0].expected_exception", func(ts *Tests) { ts.Cases[0].ExpectedException = "Value Error" }},
		{"tests.cases[0].expected_exception", func(ts *Tests) { ts.Cases[0].ExpectedException = "ValueError" }},
		{"tests.cases[0].expected_exception", func(ts *Tests) {
			ts.Cases[0].Expected, ts.Cases[0].ExpectedType, ts.Cases[0].ExpectedException = nil, "int", "ValueError"
		}},
		{"tests.cases", func(ts *Tests) { ts.Cases[0].Args = rawArgs(`"` + strings.Repeat("x", MaxTestsBytes) + `"`) }},
	} {
		ts := ok()
		tc.mutate(ts)
		err := ts.Validate()
		var fe *nsjail.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("want an error on %s, got %v", tc.field, err)
		}
	}
	// The good shapes: a dotted exception, expected null, no checks at all.
	good := &Tests{Function: "_f2", Cases: []TestCase{
		{ExpectedException: "json.decoder.JSONDecodeError"},
		{Expected: json.RawMessage(`null`), ExpectedType: "NoneType"},
		{Name: "bare"},
	}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
}

// tests.json carries function, args and kwargs only, with [] and {} for
// absent ones.
func TestTestsJailJSON(t *testing.T) {
	ts := &Tests{Function: "f", Cases: []TestCase{
		{Name: "n1", Args: rawArgs(` 1 `, `[2, {"a": null}]`), Expected: json.RawMessage(`3`), ExpectedType: "int"},
		{Name: "n2", Kwargs: map[string]json.RawMessage{"k": json.RawMessage(`"v"`)}, ExpectedException: "E"},
	}}
	got := string(ts.jailJSON())
	want := `{"function":"f","cases":[{"args":[1,[2,{"a":null}]],"kwargs":{}},{"args":[],"kwargs":{"k":"v"}}]}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestNumbersComparePythonStyle(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		eq   bool
	}{
		{"3", "3.0", true},
		{"3", "3", true},
		{"3", "3.5", false},
		{"1E2", "100", true},
		{"-0.0", "0", true},
		{"0.1", "0.10000000000000001", true}, // the same double, as json.loads makes them
		{"0.1", "0.1000000000000001", false},
		{"9007199254740993", "9007199254740992.0", false}, // 2**53+1 is not that float in Python
		{"9007199254740992", "9007199254740992.0", true},
		{"18446744073709551617", "18446744073709551617", true},
		{"18446744073709551617", "18446744073709551616", false},
		{"1e400", "1e400", true}, // inf == inf
		{"1e400", "-1e400", false},
		{"1e400", "1" + strings.Repeat("0", 400), false},
		{"1e22", "10000000000000000000000", true},
	} {
		if got := numbersEqual(tc.a, tc.b); got != tc.eq {
			t.Errorf("%s == %s: %v, want %v", tc.a, tc.b, got, tc.eq)
		}
		if got := numbersEqual(tc.b, tc.a); got != tc.eq {
			t.Errorf("%s == %s: %v, want %v", tc.b, tc.a, got, tc.eq)
		}
	}
}

func TestVerdictValues(t *testing.T) {
	for _, tc := range []struct {
		expected, value string
		pass            bool
		detail          string
	}{
		{`3`, `3.0`, true, "OK"},
		{`{"a": 1, "b": [1, 2]}`, `{"b": [1.0, 2], "a": 1}`, true, "OK"},
		{`null`, `null`, true, "OK"},
		{`"x"`, `"x"`, true, "OK"},
		{`[]`, `[]`, true, "OK"},
		{`1`, `true`, false, "expected 1, got true"},
		{`true`, `1`, false, "expected true, got 1"},
		{`false`, `0`, false, ""},
		{`null`, `0`, false, "expected null, got 0"},
		{`0`, `null`, false, ""},
		{`"3"`, `3`, false, `expected "3", got 3`},
		{`[1, 2, 3]`, `[1, 2, 4]`, false, "expected [1,2,3], got [1,2,4] (at [2]: expected 3, got 4)"},
		{`[1, 2, 3]`, `[1, 2]`, false, "(expected 3 items, got 2)"},
		{`[[1], [2, 3]]`, `[[1], [2]]`, false, "(at [1]: expected 2 items, got 1)"},
		{`{"a": {"b": 1}}`, `{"a": {"b": 2}}`, false, `(at ["a"]["b"]: expected 1, got 2)`},
		{`{"a": 1, "b": 2}`, `{"a": 1}`, false, `(at ["b"]: the key is missing from the returned value)`},
		{`{"a": 1}`, `{"a": 1, "z": 2}`, false, `(at ["z"]: the returned value has this key, which is not expected)`},
		{`{"a": 1}`, `[["a", 1]]`, false, ""},
	} {
		res := verdict(t, TestCase{Expected: json.RawMessage(tc.expected)}, `"ms":0.5,"type":"x","value":`+tc.value+`}`)
		if res.Passed != tc.pass || !strings.Contains(res.Detail, tc.detail) || res.Output != tc.value || res.DurationMs != 0.5 {
			t.Errorf("expected %s, value %s: %+v", tc.expected, tc.value, res)
		}
	}
}

func TestVerdictChecks(t *testing.T) {
	ret := `"ms":1,"type":"int","value":3}`
	repr := `"ms":1,"type":"set","repr":"{3}","why":"Object of type set is not JSON serializable"}`
	raised := func(typ string, mro ...string) string {
		b, _ := json.Marshal(raisedReport{Type: typ, MRO: mro, Message: "bad", Line: 7})
		return `"ms":1,"raised":` + string(b) + `}`
	}
	jde := raised("json.decoder.JSONDecodeError", "json.decoder.JSONDecodeError", "ValueError", "Exception", "BaseException")
	for _, tc := range []struct {
		name   string
		c      TestCase
		rec    string
		pass   bool
		output string
		detail string
	}{
		{"no checks, returned", TestCase{}, ret, true, "3", "OK"},
		{"no checks, raised", TestCase{}, raised("KeyError", "KeyError", "LookupError", "Exception", "BaseException"), false, "", "the call raised KeyError: bad (line 7)"},
		{"type", TestCase{ExpectedType: "int"}, ret, true, "3", "OK"},
		{"wrong type", TestCase{ExpectedType: "float"}, ret, false, "3", "expected type float, got int"},
		{"value and type", TestCase{Expected: json.RawMessage(`3.0`), ExpectedType: "float"}, ret, false, "3", "expected type float, got int"},
		{"value and type, both wrong", TestCase{Expected: json.RawMessage(`4`), ExpectedType: "str"}, ret, false, "3", "expected 4, got 3; expected type str, got int"},
		{"repr fails a value", TestCase{Expected: json.RawMessage(`[3]`)}, repr, false, "{3}", "expected [3], got {3} of type set, which has no JSON form (Object of type set is not JSON serializable)"},
		{"repr passes a type", TestCase{ExpectedType: "set"}, repr, true, "{3}", "OK"},
		{"expected but raised", TestCase{Expected: json.RawMessage(`3`)}, jde, false, "", "expected 3, but the call raised json.decoder.JSONDecodeError: bad (line 7)"},
		{"exception, bare name", TestCase{ExpectedException: "JSONDecodeError"}, jde, true, "", "OK"},
		{"exception, qualified", TestCase{ExpectedException: "json.decoder.JSONDecodeError"}, jde, true, "", "OK"},
		{"exception, base class", TestCase{ExpectedException: "ValueError"}, jde, true, "", "OK"},
		{"exception, wrong qualification", TestCase{ExpectedException: "decoder.JSONDecodeError"}, jde, false, "", "expected decoder.JSONDecodeError, got json.decoder.JSONDecodeError: bad (line 7)"},
		{"exception, other class", TestCase{ExpectedException: "TypeError"}, jde, false, "", "expected TypeError, got json.decoder.JSONDecodeError"},
		{"exception, returned", TestCase{ExpectedException: "TypeError"}, ret, false, "3", "expected TypeError to be raised, but the call returned 3"},
		{"exception, returned a repr", TestCase{ExpectedException: "TypeError"}, repr, false, "{3}", "but the call returned {3}"},
	} {
		res := verdict(t, tc.c, tc.rec)
		if res.Passed != tc.pass || res.Output != tc.output || !strings.Contains(res.Detail, tc.detail) {
			t.Errorf("%s: %+v", tc.name, res)
		}
	}
}

// Whatever ParseReport cannot use is ignored, or fails the case it names;
// nothing it cannot use passes a case.
func TestParseReportIsStrict(t *testing.T) {
	tests := &Tests{Function: "f", Cases: []TestCase{
		{Name: "a", Expected: json.RawMessage(`1`)},
		{Name: "b", Expected: json.RawMessage(`1`)},
		{Name: "c", Expected: json.RawMessage(`1`)},
		{Name: "d", Expected: json.RawMessage(`1`)},
		{Name: "e", Expected: json.RawMessage(`1`)},
		{Name: "f", Expected: json.RawMessage(`1`)},
	}}
	good := `"ms":0,"type":"int","value":1}`
	data := report(
		"garbage", "", "null", "[1]", `{"t":"unknown","i":0}`, `{"t":"case","i":-1,`+good, `{"t":"case","i":6,`+good,
		`{"t":"case","i":"0",`+good, `{"t":"case",`+good,
		fmt.Sprintf(started, 6),
		`{"t":"case","i":0,`+good,
		`{"t":"case","i":1,`+good, `{"t":"case","i":1,`+good, // twice
		`{"t":"case","i":2,"ms":0,"type":"int","value":1,"repr":"1"}`,                                       // two forms
		`{"t":"case","i":3,"ms":"fast","type":"int","value":1}`,                                             // a field of the wrong type
		`{"t":"case","i":4,"ms":0,"value":1}`,                                                               // no type
		`{"t":"case","i":5,"ms":0,"raised":{"type":"E","mro":["E","ValueError","TypeError"],"message":""}}`, // not an MRO
		`{"t":"end"}`,
	)
	data = append(data, `{"t":"case","i":5,`+good...) // unterminated: never a record
	tr := ParseReport(data, false, tests).Verdicts(tests, exited0)
	want := map[string]string{
		"a": "OK",
		"b": "reported more than once",
		"c": "exactly one of value, repr and raised",
		"d": "a field has the wrong type",
		"e": "the value has no type",
		"f": "not a class hierarchy",
	}
	for _, r := range tr.Results {
		if r.Passed != (r.Name == "a") || !strings.Contains(r.Detail, want[r.Name]) {
			t.Errorf("%+v", r)
		}
	}
	if tr.Passed != 1 || tr.Failed != 5 || tr.AllPassed {
		t.Errorf("%+v", tr)
	}
	// Raised records: the MRO must start with the type and end with BaseException, each class once.
	long := []string{"E"}
	for i := 0; i < maxMRO; i++ {
		long = append(long, fmt.Sprintf("C%d", i))
	}
	long = append(long, "BaseException")
	for _, mro := range [][]string{{}, {"E"}, {"F", "BaseException"}, {"E", "Exception", "Exception", "BaseException"}, {"E", "", "BaseException"}, long} {
		if plausibleMRO(&raisedReport{Type: "E", MRO: mro}) {
			t.Errorf("%v is taken for an MRO", mro)
		}
	}
	if !plausibleMRO(&raisedReport{Type: "E", MRO: []string{"E", "ValueError", "Exception", "BaseException"}}) {
		t.Error("a real MRO is refused")
	}
}

// A case without a record fails, and says why from how the program ended.
func TestVerdictsNotRun(t *testing.T) {
	tests := &Tests{Function: "add", Cases: []TestCase{{Name: "a"}, {}, {Name: "c"}}}
	one := `{"t":"case","i":0,"ms":0,"type":"int","value":1}`
	exc := `{"t":"exception","type":"NameError","message":"name 'x' is not defined","line":3,"traceback":"Traceback…"}`
	killed := &nsjail.Result{Status: nsjail.StatusKilled, ExitCode: 137, Signal: syscall.SIGKILL, KillReason: nsjail.KillWallTimeout}
	segv := &nsjail.Result{Status: nsjail.StatusSignaled, ExitCode: 139, Signal: syscall.SIGSEGV}
	before := func(why string) [3]string { return [3]string{why, why, why} }
	for _, tc := range []struct {
		name      string
		data      []byte
		truncated bool
		jail      *nsjail.Result
		want      [3]string
	}{
		{"exception", report(exc), false, exited1, before("not run: the program raised NameError at line 3 before the tests ran")},
		{"exception at exit 0", report(exc), false, exited0, before("not run: the program exited with code 0 before the tests ran")},
		{"killed before", nil, false, killed, before("not run: the program was killed (wall_timeout) before the tests ran")},
		{"no jail", nil, false, nil, before("not run: the program ended before the tests ran")},
		{"killed during", report(fmt.Sprintf(started, 3), one), false, killed, [3]string{"OK",
			"failed: the program was killed (wall_timeout) while this case ran", "not run: the program was killed (wall_timeout) during 'case 2'"}},
		{"signal during", report(fmt.Sprintf(started, 3), one), false, segv, [3]string{"OK",
			"failed: the program died of signal SIGSEGV while this case ran", "not run: the program died of signal SIGSEGV during 'case 2'"}},
		{"exit 0 during", report(fmt.Sprintf(started, 3), one), false, exited0, [3]string{"OK",
			"failed: the program exited with code 0 while this case ran (os._exit?), or closed the harness's report channel",
			"not run: the program exited with code 0 during 'case 2'"}},
		{"missing", report(`{"t":"tests","n":3,"function":"missing"}`, `{"t":"end"}`), false, exited0, before("not run: the program defines no function named 'add'")},
		{"not callable", report(`{"t":"tests","n":3,"function":"not_callable","type":"int"}`, `{"t":"end"}`), false, exited0, before("not run: 'add' is an object of type int, not a function")},
		{"unreadable", report(`{"t":"tests","error":"JSONDecodeError: bad"}`, `{"t":"end"}`), false, exited0, before("not run: the harness could not read the test cases: JSONDecodeError: bad")},
		{"other count", report(`{"t":"tests","n":2,"function":"ok"}`), false, exited0, before("not run: the harness could not read the test cases: it saw a different number of cases")},
		{"lost", report(fmt.Sprintf(started, 3), one, `{"t":"end"}`), false, exited0, [3]string{"OK",
			"not reported: the harness's report of this case was lost", "not reported: the harness's report of this case was lost"}},
		{"cut", report(fmt.Sprintf(started, 3), one), true, exited0, [3]string{"OK",
			"not reported: the harness's report passed its limit of 16.0 MiB", "not reported: the harness's report passed its limit of 16.0 MiB"}},
	} {
		tr := ParseReport(tc.data, tc.truncated, tests).Verdicts(tests, tc.jail)
		for i, w := range tc.want {
			if !strings.HasPrefix(tr.Results[i].Detail, w) || tr.Results[i].Passed != (w == "OK") {
				t.Errorf("%s: case %d: %+v, want %q", tc.name, i, tr.Results[i], w)
			}
		}
	}
	if (*Report)(nil).Verdicts(nil, exited0) != nil || ParseReport(nil, false, nil).Verdicts(nil, nil) != nil {
		t.Error("verdicts without tests")
	}
	if tr := (*Report)(nil).Verdicts(tests, exited0); tr.Failed != 3 {
		t.Errorf("a nil report passes: %+v", tr)
	}
}

func TestUncaughtException(t *testing.T) {
	data := report(`{"t":"exception","type":"E1","message":"","line":1,"traceback":""}`, `{"t":"exception","type":"E2","message":"m","line":-4,"traceback":"tb"}`)
	r := ParseReport(data, false, nil)
	if e := r.UncaughtException(exited1); e == nil || *e != (Exception{Type: "E2", Message: "m", Line: 0, Traceback: "tb"}) {
		t.Errorf("%+v", e)
	}
	if r.UncaughtException(exited0) != nil || (*Report)(nil).UncaughtException(exited1) != nil {
		t.Error("an exception at exit 0")
	}
}

func TestOutputIsCapped(t *testing.T) {
	big := `"` + strings.Repeat("é", maxOutputBytes) + `"`
	res := verdict(t, TestCase{ExpectedType: "str"}, `"ms":0,"type":"str","value":`+big+`}`)
	if !res.Passed || len(res.Output) > maxOutputBytes+40 || !strings.HasSuffix(res.Output, fmt.Sprintf("… (%d bytes in all)", len(big))) {
		t.Errorf("%d bytes: %.40q…%q", len(res.Output), res.Output, res.Output[len(res.Output)-30:])
	}
	if !strings.HasPrefix(res.Output, `"éé`) || !json.Valid([]byte(res.Output[:len(res.Output)-len(fmt.Sprintf("… (%d bytes in all)", len(big)))]+`"`)) {
		t.Error("cut inside a character")
	}
}

func TestHarnessFeedback(t *testing.T) {
	if fb := HarnessFeedback(nil, nil, nil); fb == nil || len(fb) != 0 {
		t.Errorf("%#v", fb)
	}
	fb := HarnessFeedback(&Exception{Type: "ZeroDivisionError", Message: "division by zero", Line: 3}, nil, nil)
	if len(fb) != 1 || fb[0] != "The program raised ZeroDivisionError at line 3: division by zero. A division or modulo by zero: guard against a zero divisor." {
		t.Errorf("%q", fb)
	}
	fb = HarnessFeedback(&Exception{Type: "ModuleNotFoundError", Message: "No module named 'numpy'", Line: 1}, nil, nil)
	if !strings.Contains(fb[0], "only the Python standard library") && !strings.Contains(fb[0], "Only the Python standard library") {
		t.Errorf("%q", fb)
	}
	fb = HarnessFeedback(&Exception{Type: "SyntaxError", Message: "'(' was never closed", Line: 2}, nil, nil)
	if !strings.HasPrefix(fb[0], "The code does not compile: SyntaxError at line 2: '(' was never closed. Fix the syntax") {
		t.Errorf("%q", fb)
	}
	for _, name := range []string{"NameError", "TypeError", "IndexError", "KeyError", "AttributeError", "RecursionError", "ValueError", "IndentationError", "json.decoder.JSONDecodeError"} {
		if s := exceptionSentence(&Exception{Type: name}); !strings.HasPrefix(s, "The ") || len(strings.Split(s, ". ")) < 2 {
			t.Errorf("no hint for %s: %q", name, s)
		}
	}

	// 1000 failing cases make a handful of sentences, with their calls.
	tests := &Tests{Function: "add"}
	for i := 0; i < MaxTestCases; i++ {
		tests.Cases = append(tests.Cases, TestCase{Args: rawArgs(fmt.Sprint(i), `null`, `[true, {"k": "v"}]`), Kwargs: map[string]json.RawMessage{"z": json.RawMessage(`false`)}, Expected: json.RawMessage(fmt.Sprint(i + 1))})
	}
	lines := []string{fmt.Sprintf(started, len(tests.Cases))}
	for i := range tests.Cases {
		if i < 990 {
			lines = append(lines, fmt.Sprintf(`{"t":"case","i":%d,"ms":0,"type":"int","value":%d}`, i, i))
		}
	}
	tr := ParseReport(report(lines...), false, tests).Verdicts(tests, &nsjail.Result{Status: nsjail.StatusKilled, KillReason: nsjail.KillCPUTimeout})
	fb = HarnessFeedback(nil, tr, tests)
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
	fb = HarnessFeedback(nil, tr, tests)
	if len(fb) != 1 || !strings.HasPrefix(fb[0], "None of the 1000 tests ran: the program exited with code 0 before the tests ran. The tests call the function after") {
		t.Errorf("%q", fb)
	}
	tr = ParseReport(report(`{"t":"tests","n":1000,"function":"missing"}`), false, tests).Verdicts(tests, exited0)
	if fb = HarnessFeedback(nil, tr, tests); len(fb) != 1 || !strings.Contains(fb[0], "defines no function named 'add'. Define it at the top level") {
		t.Errorf("%q", fb)
	}

	// Every test passed: nothing to say.
	one := oneCase(TestCase{Expected: json.RawMessage(`1`)})
	tr = ParseReport(report(fmt.Sprintf(started, 1), `{"t":"case","i":0,"ms":0,"type":"int","value":1}`), false, one).Verdicts(one, exited0)
	if fb = HarnessFeedback(nil, tr, one); len(fb) != 0 || !tr.AllPassed {
		t.Errorf("%q %+v", fb, tr)
	}
}

// TestForgedReportsCannotHurtTheDaemon: the report comes from the jail.
// A record with huge texts must not make the answer grow with the number
// of cases, a huge integer must not cost the daemon seconds, and an absurd
// duration must not make the answer unencodable.
func TestForgedReportsCannotHurtTheDaemon(t *testing.T) {
	tests := &Tests{Function: "f"}
	for i := range 1000 {
		tests.Cases = append(tests.Cases, TestCase{Name: fmt.Sprint("c", i), Expected: json.RawMessage(`3`)})
	}
	huge := strings.Repeat("A", 15<<20)
	for _, rec := range []string{
		`{"t":"tests","n":1000,"function":"not_callable","type":"` + huge + `"}`,
		`{"t":"tests","error":"` + huge + `"}`,
	} {
		tr := ParseReport(report(rec), true, tests).Verdicts(tests, exited0)
		b, err := json.Marshal(tr)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 4<<20 {
			t.Errorf("a forged %d-byte record made a %d-byte verdict", len(rec), len(b))
		}
	}
	exc := ParseReport(report(`{"t":"exception","type":"E","message":"`+huge+`","traceback":"`+huge+`"}`), true, nil).UncaughtException(exited1)
	if exc == nil || len(exc.Message) > 8<<10 || len(exc.Traceback) > 96<<10 {
		t.Errorf("exception texts not bounded: %v", exc != nil)
	}

	start := time.Now()
	digits := strings.Repeat("7", 8<<20)
	r := verdict(t, TestCase{Expected: json.RawMessage(`3`)}, `"ms":0,"type":"int","value":`+digits+`}`)
	r2 := verdict(t, TestCase{Expected: json.RawMessage(`3.5`)}, `"ms":0,"type":"int","value":`+digits[:1<<20]+`}`)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("judging two huge integers took %v", took)
	}
	if r.Passed || r2.Passed {
		t.Error("a huge integer passed")
	}
	if !verdict(t, TestCase{Expected: json.RawMessage(`3`)}, `"ms":0,"type":"int","value":3}`).Passed ||
		!verdict(t, TestCase{Expected: json.RawMessage(`3.0`)}, `"ms":0,"type":"int","value":3}`).Passed ||
		!verdict(t, TestCase{Expected: json.RawMessage(`0`)}, `"ms":0,"type":"int","value":-0}`).Passed {
		t.Error("small numbers no longer compare by value")
	}

	for _, ms := range []string{"1e306", "1e400", "-1", "NaN"} {
		tr := ParseReport(report(fmt.Sprintf(started, 1), `{"t":"case","i":0,"ms":`+ms+`,"type":"int","value":3}`, `{"t":"end"}`), false, oneCase(TestCase{Expected: json.RawMessage(`3`)})).
			Verdicts(oneCase(TestCase{Expected: json.RawMessage(`3`)}), exited0)
		if _, err := json.Marshal(tr); err != nil {
			t.Errorf("ms %s: the verdict cannot be encoded: %v", ms, err)
		}
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

// A traceback is cut from its start on a rune boundary: its end, where the
// error is, stays valid UTF-8.
func TestCapTextTailKeepsRunes(t *testing.T) {
	s := strings.Repeat("é", 100) // two bytes each
	for n := 2; n < 20; n++ {     // 1: no whole rune fits
		got := capTextTail(s, n)
		_, tail, _ := strings.Cut(got, "…")
		if !utf8.ValidString(got) || !strings.HasSuffix(got, "é") || len(tail) > n {
			t.Errorf("n=%d: %q (valid UTF-8, ending with the text's end, at most n bytes of it)", n, got)
		}
	}
}
