package daemon

// Tests: the request's "tests" (CONTRACT.md §3), their validation, the
// verdicts computed from the harness's report, and their feedback.
//
// Verdict semantics. A case passes when every check it has holds:
//   - expected (any JSON value; null expects None): the return value's JSON
//     text, as the harness converted it, equals it the way Python's == would
//     compare the two after json.loads: numbers by value, an integer exactly
//     against a float (3 == 3.0, but 2**53+1 != 9007199254740992.0), objects
//     key by key in any order, lists item by item. One departure from
//     Python: a boolean equals only a boolean (Python's True == 1 is true,
//     here true does not equal 1), because a function that returns True
//     where 1 is expected is almost always wrong. The harness converts as
//     json.dumps does, so a tuple equals the list with its items and a dict's
//     int keys equal their decimal strings (the caller's expected value went
//     through JSON too). A value reported by its repr (no JSON form: a set,
//     a generator, NaN, a cycle, over 1 MiB of JSON) never equals anything.
//   - expected_type: type(x).__name__ of the return value, exactly.
//   - expected_exception: the call raised that class or a subclass: the name
//     matches one of the exception's classes, by its name as python prints it
//     ("json.decoder.JSONDecodeError") or by its bare name ("JSONDecodeError").
//     It cannot be combined with expected or expected_type.
//
// A case without any check passes when the call returns without raising. A
// case the harness did not report fails, and its detail says why ("not run:
// …", "not reported: …", "failed: …"). A case's name defaults to "case N",
// N counting from 1; names must be unique.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"agentjail/nsjail"
)

// Tests is the request's "tests": the function to call and its cases.
type Tests struct {
	Function string     `json:"function"`
	Cases    []TestCase `json:"cases"`
}

// TestCase is one call of the function and what it must do.
type TestCase struct {
	Name              string                     `json:"name"` // default "case N", N from 1
	Args              []json.RawMessage          `json:"args"`
	Kwargs            map[string]json.RawMessage `json:"kwargs"`
	Expected          json.RawMessage            `json:"expected"` // absent = no value check; JSON null = expects None
	ExpectedType      string                     `json:"expected_type"`
	ExpectedException string                     `json:"expected_exception"`
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
	MaxTestCases    = 1000
	MaxTestsBytes   = 8 << 20 // args, kwargs and expected values of all cases together
	MaxTestNameLen  = 200
	maxOutputBytes  = 16 << 10 // of one TestResult.Output
	maxShownBytes   = 300      // of a value quoted in a detail or a feedback sentence
	maxFeedbackFail = 5        // failed cases that feedback describes one by one
)

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
	if len(t.Cases) > MaxTestCases {
		return testsErr("tests.cases", "has %d cases, more than the limit of %d", len(t.Cases), MaxTestCases)
	}
	seen := make(map[string]int, len(t.Cases))
	size := 0
	for i, c := range t.Cases {
		f := fmt.Sprintf("tests.cases[%d]", i)
		name := t.caseName(i)
		switch {
		case len(c.Name) > MaxTestNameLen:
			return testsErr(f+".name", "is longer than %d bytes", MaxTestNameLen)
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
	if size > MaxTestsBytes {
		return testsErr("tests.cases", "args, kwargs and expected values take %d bytes, more than the limit of %d", size, MaxTestsBytes)
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

// Verdicts judges each case from the report; nil when t is nil. jail is how
// the program ended, which explains the cases the harness did not report.
func (r *Report) Verdicts(t *Tests, jail *nsjail.Result) *TestsResult {
	if t == nil {
		return nil
	}
	if r == nil {
		r = &Report{}
	}
	running := -1 // the first case without a record: the one that was running when the program ended
	for i := range t.Cases {
		if i >= len(r.cases) || r.cases[i].records == 0 {
			running = i
			break
		}
	}
	out := &TestsResult{Total: len(t.Cases), Results: make([]TestResult, len(t.Cases))}
	for i, c := range t.Cases {
		res := TestResult{Name: t.caseName(i)}
		var cr *caseReport
		if i < len(r.cases) {
			cr = &r.cases[i]
		}
		switch {
		case cr == nil || cr.records == 0:
			res.Detail = r.notRun(t, i, running, jail)
		case cr.records > 1:
			res.Detail = "failed: this case was reported more than once, so the program wrote to the harness's report channel; none of its reports can be trusted"
		case cr.malformed != "":
			res.Detail = "failed: the report of this case is malformed (" + cr.malformed + ")"
		default:
			res.Passed, res.Output, res.Detail = judge(&c, cr)
			res.DurationMs = math.Round(cr.ms*1000) / 1000
		}
		if res.Passed {
			out.Passed++
		}
		out.Results[i] = res
	}
	out.Failed = out.Total - out.Passed
	out.AllPassed = out.Failed == 0
	return out
}

// notRun says why case i has no report.
func (r *Report) notRun(t *Tests, i, running int, jail *nsjail.Result) string {
	end := programEnd(jail)
	switch {
	case r.truncated:
		return fmt.Sprintf("not reported: the harness's report passed its limit of %s (return smaller values)", Bytes(MaxReportBytes))
	case r.started == nil:
		if e := r.UncaughtException(jail); e != nil {
			return fmt.Sprintf("not run: the program raised %s%s before the tests ran", e.Type, atLine(e.Line))
		}
		return "not run: the program " + end + " before the tests ran"
	case r.started.err != "":
		return "not run: the harness could not read the test cases: " + r.started.err
	case r.started.function == "missing":
		return fmt.Sprintf("not run: the program defines no function named '%s'", t.Function)
	case r.started.function == "not_callable":
		return fmt.Sprintf("not run: '%s' is an object of type %s, not a function", t.Function, r.started.typ)
	case r.started.function != "ok" || r.ended:
		return "not reported: the harness's report of this case was lost (the program closed or replaced its report channel)"
	case i == running && jail != nil && jail.Status == nsjail.StatusOK:
		return "failed: the program exited with code 0 while this case ran (os._exit?), or closed the harness's report channel"
	case i == running:
		return "failed: the program " + end + " while this case ran"
	}
	return fmt.Sprintf("not run: the program %s during '%s'", end, t.caseName(running))
}

// programEnd says how the program ended, for a sentence "the program …".
func programEnd(j *nsjail.Result) string {
	switch {
	case j == nil:
		return "ended"
	case j.KillReason != nsjail.KillNone:
		return "was killed (" + string(j.KillReason) + ")"
	case j.Status == nsjail.StatusSignaled:
		return "died of signal " + unix.SignalName(j.Signal)
	}
	return fmt.Sprintf("exited with code %d", j.ExitCode)
}

func atLine(line int) string {
	if line > 0 {
		return fmt.Sprintf(" at line %d", line)
	}
	return ""
}

// judge applies a case's checks to the harness's report of it.
func judge(c *TestCase, cr *caseReport) (passed bool, output, detail string) {
	switch {
	case cr.value != nil:
		output = capText(string(cr.value), maxOutputBytes)
	case cr.repr != nil:
		output = capText(*cr.repr, maxOutputBytes)
	}
	if c.ExpectedException != "" {
		switch {
		case cr.raised == nil:
			return false, output, fmt.Sprintf("expected %s to be raised, but the call returned %s", c.ExpectedException, shown(cr))
		case !raisedMatches(cr.raised, c.ExpectedException):
			return false, output, fmt.Sprintf("expected %s, got %s", c.ExpectedException, raisedText(cr.raised))
		}
		return true, output, "OK"
	}
	if cr.raised != nil {
		if c.Expected != nil {
			return false, output, fmt.Sprintf("expected %s, but the call raised %s", short(c.Expected), raisedText(cr.raised))
		}
		return false, output, "the call raised " + raisedText(cr.raised)
	}
	var fails []string
	if c.Expected != nil {
		if d := valueDiff(c.Expected, cr); d != "" {
			fails = append(fails, d)
		}
	}
	if c.ExpectedType != "" && cr.typ != c.ExpectedType {
		fails = append(fails, fmt.Sprintf("expected type %s, got %s", c.ExpectedType, cr.typ))
	}
	if len(fails) > 0 {
		return false, output, strings.Join(fails, "; ")
	}
	return true, output, "OK"
}

// valueDiff compares the expected value with the returned one; "" when equal.
func valueDiff(expected json.RawMessage, cr *caseReport) string {
	if cr.value == nil {
		why := ""
		if cr.why != "" {
			why = " (" + capText(cr.why, maxShownBytes) + ")"
		}
		return fmt.Sprintf("expected %s, got %s of type %s, which has no JSON form%s", short(expected), capText(*cr.repr, maxShownBytes), cr.typ, why)
	}
	want, err := decodeJSON(expected)
	if err != nil {
		return "expected value is not JSON: " + err.Error()
	}
	got, err := decodeJSON(cr.value)
	if err != nil {
		return "the reported value is not JSON: " + err.Error()
	}
	d := firstDiff("", want, got)
	if d == nil {
		return ""
	}
	s := fmt.Sprintf("expected %s, got %s", short(expected), short(cr.value))
	_, wl := d.want.([]any)
	_, gl := d.got.([]any)
	switch {
	case d.path != "":
		s += fmt.Sprintf(" (at %s: %s)", d.path, d)
	case wl && gl:
		s += " (" + d.String() + ")"
	}
	return s
}

// difference is what firstDiff found at the first place two values differ.
type difference struct {
	path      string // Python's subscript notation: [2]["name"]; "" at the top
	want, got any
	missing   bool // the key is absent from the returned object
	extra     bool // the key is absent from the expected object
}

// firstDiff walks two decoded JSON values in order (object keys sorted) and
// returns their first difference, nil when they are equal.
func firstDiff(path string, want, got any) *difference {
	switch w := want.(type) {
	case json.Number:
		if g, ok := got.(json.Number); ok && numbersEqual(string(w), string(g)) {
			return nil
		}
	case string:
		if g, ok := got.(string); ok && g == w {
			return nil
		}
	case bool:
		if g, ok := got.(bool); ok && g == w {
			return nil
		}
	case nil:
		if got == nil {
			return nil
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			break
		}
		for i := 0; i < len(w) && i < len(g); i++ {
			if d := firstDiff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i]); d != nil {
				return d
			}
		}
		if len(w) == len(g) {
			return nil
		}
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			break
		}
		keys := slices.Collect(maps.Keys(w))
		for k := range g {
			if _, ok := w[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := path + "[" + strconv.Quote(k) + "]"
			wv, inW := w[k]
			gv, inG := g[k]
			switch {
			case !inG:
				return &difference{path: p, want: wv, missing: true}
			case !inW:
				return &difference{path: p, got: gv, extra: true}
			}
			if d := firstDiff(p, wv, gv); d != nil {
				return d
			}
		}
		return nil
	}
	return &difference{path: path, want: want, got: got}
}

// String says what differs there, for valueDiff.
func (d *difference) String() string {
	switch {
	case d.missing:
		return "the key is missing from the returned value"
	case d.extra:
		return "the returned value has this key, which is not expected"
	}
	w, wl := d.want.([]any)
	g, gl := d.got.([]any)
	if wl && gl {
		return fmt.Sprintf("expected %d items, got %d", len(w), len(g))
	}
	return fmt.Sprintf("expected %s, got %s", shortAny(d.want), shortAny(d.got))
}

// numbersEqual compares two JSON numbers as Python compares what json.loads
// makes of them: an int when the text has no '.', 'e' or 'E', else a float
// (1e400 is inf); an int and a float compare by exact value.
//
// The texts come from the jail: an integer of millions of digits must not
// cost the daemon seconds of big.Int parsing (quadratic), so two integers
// compare as text, and an integer too long to be any finite float64 (over
// 310 digits) equals no float.
func numbersEqual(a, b string) bool {
	aInt, bInt := !strings.ContainsAny(a, ".eE"), !strings.ContainsAny(b, ".eE")
	switch {
	case aInt && bInt:
		return canonicalInt(a) == canonicalInt(b)
	case aInt && len(a) > maxFloatIntDigits, bInt && len(b) > maxFloatIntDigits:
		return false
	}
	af, ai, aok := pyNumber(a)
	bf, bi, bok := pyNumber(b)
	switch {
	case !aok || !bok:
		return false
	case ai != nil && bi != nil:
		return ai.Cmp(bi) == 0
	case ai == nil && bi == nil:
		return af == bf
	case ai != nil:
		return intEqualsFloat(ai, bf)
	}
	return intEqualsFloat(bi, af)
}

// maxFloatIntDigits: the largest finite float64 has 309 integer digits.
const maxFloatIntDigits = 310

// canonicalInt is a JSON integer's text as Python would print the int:
// "-0" is "0". (JSON integers have no leading zeros or plus sign.)
func canonicalInt(s string) string {
	if s == "-0" {
		return "0"
	}
	return s
}

func intEqualsFloat(i *big.Int, f float64) bool {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return false
	}
	return new(big.Rat).SetFloat64(f).Cmp(new(big.Rat).SetInt(i)) == 0
}

// pyNumber parses a JSON number as json.loads does: an int, or a float.
func pyNumber(s string) (f float64, i *big.Int, ok bool) {
	if strings.ContainsAny(s, ".eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, nil, false
		}
		return f, nil, true
	}
	i, ok = new(big.Int).SetString(s, 10)
	return 0, i, ok
}

// decodeJSON decodes one JSON value, numbers kept as their text.
func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("more than one value")
	}
	return v, nil
}

// raisedMatches: the exception is of class name or a subclass of it.
func raisedMatches(e *raisedReport, name string) bool {
	return slices.ContainsFunc(e.MRO, func(c string) bool {
		return c == name || (!strings.Contains(name, ".") && c[strings.LastIndexByte(c, '.')+1:] == name)
	})
}

func raisedText(e *raisedReport) string {
	s := e.Type
	if e.Message != "" {
		s += ": " + capText(e.Message, maxShownBytes)
	}
	if e.Line > 0 {
		s += fmt.Sprintf(" (line %d)", e.Line)
	}
	return s
}

// shown is the returned value, for a sentence.
func shown(cr *caseReport) string {
	if cr.value != nil {
		return short(cr.value)
	}
	if cr.repr != nil {
		return capText(*cr.repr, maxShownBytes)
	}
	return "nothing"
}

// short is a JSON text made compact and cut for a sentence.
func short(b json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) == nil {
		b = buf.Bytes()
	}
	return capText(string(b), maxShownBytes)
}

func shortAny(v any) string {
	s, err := jsonText(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return capText(s, maxShownBytes)
}

// jsonText is v's JSON text as feedback shows it: `<` stays `<`.
func jsonText(v any) (string, error) {
	b, err := marshalText(v)
	return strings.TrimSuffix(string(b), "\n"), err
}

// capText cuts s to at most n bytes (on a rune boundary) and says so.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes in all)", len(s))
}

// capTextTail is capText keeping the end of s.
func capTextTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := len(s) - n
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return fmt.Sprintf("(%d bytes in all) …", len(s)) + s[cut:]
}

// HarnessFeedback gives the sentences of CONTRACT.md §3 for the uncaught
// exception (its type, line and a hint) and for the failed tests: how many
// failed, up to five of them with their call and what differed, and why the
// cases that did not run did not. The expected values they quote are the
// caller's own. Empty when there is no exception and every test passed.
func HarnessFeedback(exc *Exception, tr *TestsResult, t *Tests) []string {
	fb := []string{}
	if exc != nil {
		fb = append(fb, exceptionSentence(exc))
	}
	if tr == nil || tr.Failed == 0 {
		return fb
	}
	var listed []string
	notRun, unlisted := 0, 0
	notRunWhy := ""
	for i, r := range tr.Results {
		if r.Passed {
			continue
		}
		if why, ok := cutNotRun(r.Detail); ok {
			if notRun++; notRunWhy == "" {
				notRunWhy = why
			}
			continue
		}
		if len(listed) == maxFeedbackFail {
			unlisted++
			continue
		}
		call := ""
		if t != nil && i < len(t.Cases) {
			call = " (" + pyCall(t.Function, &t.Cases[i]) + ")"
		}
		listed = append(listed, sentence(fmt.Sprintf("Test '%s'%s failed: %s", r.Name, call, strings.TrimPrefix(r.Detail, "failed: "))))
	}
	if notRun == tr.Total {
		return append(fb, sentence(fmt.Sprintf("None of the %d tests ran: %s", tr.Total, notRunWhy))+notRunHint(notRunWhy))
	}
	fb = append(fb, fmt.Sprintf("%d of %d tests failed.", tr.Failed, tr.Total))
	fb = append(fb, listed...)
	if unlisted > 0 {
		fb = append(fb, fmt.Sprintf("%d more failed tests are not listed here.", unlisted))
	}
	if notRun > 0 {
		fb = append(fb, sentence(fmt.Sprintf("%d tests did not run: %s", notRun, notRunWhy))+notRunHint(notRunWhy))
	}
	return fb
}

// cutNotRun returns the reason of a detail that says the case did not run.
func cutNotRun(detail string) (string, bool) {
	for _, p := range []string{"not run: ", "not reported: "} {
		if why, ok := strings.CutPrefix(detail, p); ok {
			return why, true
		}
	}
	return "", false
}

func notRunHint(why string) string {
	switch {
	case strings.Contains(why, "defines no function named"):
		return " Define it at the top level of the program, with exactly that name."
	case strings.Contains(why, "before the tests ran") && strings.Contains(why, "exited with code"):
		return " The tests call the function after the program's top-level code has run to its end, so that code must not exit (sys.exit, os._exit)."
	case strings.Contains(why, "was killed") && strings.Contains(why, "before the tests ran"):
		return " The tests call the function only after the program's top-level code has run to its end."
	}
	return ""
}

// sentence ends s with a period unless it has one.
func sentence(s string) string {
	if strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}

// pyCall renders a case's call in Python's notation: add(1, [2, 3],
// key=None); a keyword that is no identifier goes in a trailing
// **{"a-b": 1}, as the harness passes it.
func pyCall(function string, c *TestCase) string {
	parts := make([]string, 0, len(c.Args)+len(c.Kwargs))
	for _, a := range c.Args {
		parts = append(parts, pyLiteral(a))
	}
	var other []string
	for _, k := range slices.Sorted(maps.Keys(c.Kwargs)) {
		if pyIdent.MatchString(k) {
			parts = append(parts, k+"="+pyLiteral(c.Kwargs[k]))
		} else {
			var q strings.Builder
			writeJSONString(&q, k)
			other = append(other, q.String()+": "+pyLiteral(c.Kwargs[k]))
		}
	}
	if len(other) > 0 {
		parts = append(parts, "**{"+strings.Join(other, ", ")+"}")
	}
	return capText(function+"("+strings.Join(parts, ", ")+")", maxShownBytes)
}

// pyLiteral renders a JSON value as the Python literal json.loads makes of it.
func pyLiteral(raw json.RawMessage) string {
	v, err := decodeJSON(raw)
	if err != nil {
		return string(raw)
	}
	var b strings.Builder
	writePy(&b, v)
	return capText(b.String(), maxShownBytes)
}

func writePy(b *strings.Builder, v any) {
	if b.Len() > maxShownBytes { // the caller cuts it anyway
		return
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if v {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case json.Number:
		b.WriteString(string(v))
	case string:
		writeJSONString(b, v)
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			writePy(b, x)
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		for i, k := range slices.Sorted(maps.Keys(v)) {
			if i > 0 {
				b.WriteString(", ")
			}
			writePy(b, k)
			b.WriteString(": ")
			writePy(b, v[k])
		}
		b.WriteByte('}')
	}
}

// exceptionSentence names the exception, its line and its message, and
// adds a hint for the common ones.
func exceptionSentence(e *Exception) string {
	bare := e.Type[strings.LastIndexByte(e.Type, '.')+1:]
	msg := ""
	if e.Message != "" {
		msg = ": " + capText(e.Message, maxShownBytes)
	}
	var s string
	switch bare {
	case "SyntaxError", "IndentationError", "TabError":
		s = fmt.Sprintf("The code does not compile: %s%s%s", bare, atLine(e.Line), msg)
	default:
		s = fmt.Sprintf("The program raised %s%s%s", e.Type, atLine(e.Line), msg)
	}
	s = sentence(s)
	if h := exceptionHints[bare]; h != "" {
		s += " " + h
	}
	return s
}

var exceptionHints = map[string]string{
	"SyntaxError":            "Fix the syntax at that line; an unclosed bracket or quote on an earlier line can also cause it.",
	"IndentationError":       "Indent each block consistently (4 spaces), and do not mix tabs and spaces.",
	"TabError":               "Indent with spaces only; do not mix tabs and spaces.",
	"NameError":              "A name is used before it is defined, or is misspelled: check its spelling and that it is defined or imported before this line.",
	"UnboundLocalError":      "A local variable is read before it is assigned: assign it on every path first, or declare it global or nonlocal.",
	"TypeError":              "A value of the wrong type was used, or a function was called with the wrong number of arguments: check the types and the signature.",
	"ValueError":             "A function got a value of the right type but a wrong value (for example int('abc')): validate or convert the input first.",
	"IndexError":             "An index is past the end of a sequence: indices run from 0 to len-1; check the bounds and empty inputs.",
	"KeyError":               "The dictionary has no such key: check `key in d` first, or use d.get(key, default).",
	"AttributeError":         "The object has no such attribute or method: check its type (it may be None) and the spelling.",
	"ZeroDivisionError":      "A division or modulo by zero: guard against a zero divisor.",
	"RecursionError":         "The recursion is too deep or never ends: check the base case, or use a loop instead.",
	"ModuleNotFoundError":    "Only the Python standard library is available in the sandbox: do without third-party packages.",
	"ImportError":            "Only the Python standard library is available in the sandbox: check the name imported.",
	"AssertionError":         "An assert statement failed: the condition it checks is false.",
	"FileNotFoundError":      "The program runs in /workspace, which holds only the files given with the request.",
	"PermissionError":        "The sandbox does not allow this operation; only /workspace and /tmp are writable.",
	"MemoryError":            "The program ran out of memory: use less, for example by processing data in chunks.",
	"OverflowError":          "A number is too large for this operation (often a float): use integers or smaller values.",
	"EOFError":               "input() read past the end of stdin: the program's stdin is empty unless the request gives one.",
	"StopIteration":          "next() was called on an exhausted iterator: give next() a default, or check for the end first.",
	"NotImplementedError":    "A function the program calls is not implemented.",
	"UnicodeDecodeError":     "Bytes were decoded with the wrong encoding: give the right one, or errors=\"replace\".",
	"JSONDecodeError":        "The text parsed is not valid JSON.",
	"ConnectionRefusedError": "The sandbox has no network access.",
	"gaierror":               "The sandbox has no network access.",
}
