package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

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
	for len(many.Cases) <= maxTestCases {
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
		{"tests.cases[0].name", func(ts *Tests) { ts.Cases[0].Name = strings.Repeat("n", maxTestNameLen+1) }},
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
		{"tests.cases", func(ts *Tests) { ts.Cases[0].Args = rawArgs(`"` + strings.Repeat("x", maxTestsBytes) + `"`) }},
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
