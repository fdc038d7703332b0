package harness

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"agentjail/nsjail"
)

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
