package harness

// Tests: the request's "tests" (docs/contract.md §3) and their validation;
// verdicts.go judges them.

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"agentjail/nsjail"
)

// Tests is the request's "tests": the function to call and its cases.
type Tests struct {
	Function string     `json:"function"`
	Cases    []TestCase `json:"cases"`
}

// TestCase is one call of the function and what it must do. Encoded (a
// --tests file sent on to a daemon), a field not set is left out: an
// absent "expected" checks no value where "expected": null expects None,
// and "expected_exception" goes with neither.
type TestCase struct {
	Name              string                     `json:"name,omitempty"` // default "case N", N from 1
	Args              []json.RawMessage          `json:"args,omitempty"`
	Kwargs            map[string]json.RawMessage `json:"kwargs,omitempty"`
	Expected          json.RawMessage            `json:"expected,omitempty"` // absent (nil) = no value check; JSON null = expects None
	ExpectedType      string                     `json:"expected_type,omitempty"`
	ExpectedException string                     `json:"expected_exception,omitempty"`
}

// TestsResult is the result's "tests".
type TestsResult struct {
	Total     int          `json:"total"`
	Passed    int          `json:"passed"`
	Failed    int          `json:"failed"`
	AllPassed bool         `json:"all_passed"`
	Results   []TestResult `json:"results"`
}

// TestResult is the verdict on one case.
type TestResult struct {
	Name       string  `json:"name"`
	Passed     bool    `json:"passed"`
	Output     string  `json:"output"` // the return value's JSON text, or its repr; "" when the call raised or did not run
	Detail     string  `json:"detail"` // "OK", or what differed, or why the case did not run
	DurationMs float64 `json:"duration_ms"`
}

// Limits of a request's tests.
const (
	maxTestCases    = 1000
	maxTestsBytes   = 8 << 20 // args, kwargs and expected values of all cases together
	maxTestNameLen  = 200
	maxOutputBytes  = 16 << 10 // of one TestResult.Output
	maxShownBytes   = 300      // of a value quoted in a detail or a feedback sentence
	maxFeedbackFail = 5        // failed cases that feedback describes one by one
)

// MaxTestCases is the most cases a request's tests may have: the daemon
// refuses more while it reads the request, before it builds them.
const MaxTestCases = maxTestCases

var (
	pyIdent  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	pyDotted = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
)

func testsErr(field, format string, a ...any) error {
	return &nsjail.FieldError{Field: field, Msg: fmt.Sprintf(format, a...)}
}

// Validate checks the tests; its errors are *nsjail.FieldError naming the
// field, e.g. "tests.cases[2].expected_type".
func (t *Tests) Validate() error {
	if t == nil {
		return nil
	}
	if !pyIdent.MatchString(t.Function) {
		return testsErr("tests.function", "must be the name of a function the program defines (a Python identifier), got %q", t.Function)
	}
	if len(t.Cases) == 0 {
		return testsErr("tests.cases", "must have at least one case")
	}
	if len(t.Cases) > maxTestCases {
		return testsErr("tests.cases", "has %d cases, more than the limit of %d", len(t.Cases), maxTestCases)
	}
	seen := make(map[string]int, len(t.Cases))
	size := 0
	for i, c := range t.Cases {
		f := fmt.Sprintf("tests.cases[%d]", i)
		name := t.caseName(i)
		switch {
		case len(c.Name) > maxTestNameLen:
			return testsErr(f+".name", "is longer than %d bytes", maxTestNameLen)
		case strings.IndexFunc(c.Name, unicode.IsControl) >= 0:
			return testsErr(f+".name", "contains a control character")
		}
		if j, ok := seen[name]; ok {
			return testsErr(f+".name", "%q is also the name of tests.cases[%d]", name, j)
		}
		seen[name] = i
		for j, a := range c.Args {
			if !json.Valid(a) {
				return testsErr(fmt.Sprintf("%s.args[%d]", f, j), "is not a JSON value")
			}
			size += len(a)
		}
		for _, k := range slices.Sorted(maps.Keys(c.Kwargs)) {
			if !json.Valid(c.Kwargs[k]) {
				return testsErr(f+".kwargs."+k, "is not a JSON value")
			}
			size += len(k) + len(c.Kwargs[k])
		}
		if c.Expected != nil && !json.Valid(c.Expected) {
			return testsErr(f+".expected", "is not a JSON value")
		}
		size += len(c.Expected)
		if c.ExpectedType != "" && !pyIdent.MatchString(c.ExpectedType) {
			return testsErr(f+".expected_type", "must be a type name as type(x).__name__ gives it, such as int, list or NoneType; got %q", c.ExpectedType)
		}
		if c.ExpectedException != "" {
			if !pyDotted.MatchString(c.ExpectedException) {
				return testsErr(f+".expected_exception", "must be an exception class name such as ValueError; got %q", c.ExpectedException)
			}
			if c.Expected != nil || c.ExpectedType != "" {
				return testsErr(f+".expected_exception", "cannot be combined with expected or expected_type: a call that raises returns no value")
			}
		}
	}
	if size > maxTestsBytes {
		return testsErr("tests.cases", "args, kwargs and expected values take %d bytes, more than the limit of %d", size, maxTestsBytes)
	}
	return nil
}

// caseName is case i's name: its own, or "case N" counting from 1.
func (t *Tests) caseName(i int) string {
	if t.Cases[i].Name != "" {
		return t.Cases[i].Name
	}
	return fmt.Sprintf("case %d", i+1)
}

// jailJSON is tests.json: what the harness needs to call the function and
// nothing else (no expected value, expected type or case name).
func (t *Tests) jailJSON() []byte {
	type jailCase struct {
		Args   []json.RawMessage          `json:"args"`
		Kwargs map[string]json.RawMessage `json:"kwargs"`
	}
	out := struct {
		Function string     `json:"function"`
		Cases    []jailCase `json:"cases"`
	}{Function: t.Function, Cases: make([]jailCase, len(t.Cases))}
	for i, c := range t.Cases {
		out.Cases[i] = jailCase{Args: c.Args, Kwargs: c.Kwargs}
		if c.Args == nil {
			out.Cases[i].Args = []json.RawMessage{}
		}
		if c.Kwargs == nil {
			out.Cases[i].Kwargs = map[string]json.RawMessage{}
		}
	}
	b, err := json.Marshal(out)
	if err != nil { // not validated: the harness reports it cannot read the file, and every case fails
		return []byte("invalid tests: " + err.Error())
	}
	return b
}
