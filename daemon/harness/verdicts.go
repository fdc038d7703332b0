package harness

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
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"agentjail/daemon/internal/jsontext"
	"agentjail/nsjail"
)

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
		return fmt.Sprintf("not reported: the harness's report passed its limit of %s (return smaller values)", Bytes(maxReportBytes))
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
	b, err := jsontext.Marshal(v)
	return strings.TrimSuffix(string(b), "\n"), err
}
