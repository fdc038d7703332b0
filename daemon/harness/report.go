package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"agentjail/nsjail"
)

// Exception is the uncaught exception of docs/contract.md §3.
type Exception struct {
	Type      string `json:"type"`
	Message   string `json:"message"`
	Line      int    `json:"line"` // in the submitted code; 0 when unknown
	Traceback string `json:"traceback"`
}

// Report is what the harness reported on the report channel.
type Report struct {
	// Exception is the last exception record, as the harness wrote it; the
	// result's "exception" is UncaughtException, which also weighs how the
	// program ended.
	Exception *Exception

	truncated bool
	started   *testsRecord // the "tests" record; nil when the tests never began
	ended     bool         // an "end" record came
	cases     []caseReport // one per case of the request's tests

	display        []Display // the display records, in order, within the bounds of addDisplay
	displayBytes   int64     // their bytes
	displayDropped bool      // a display record was dropped
}

type testsRecord struct {
	function string // "ok", "missing", "not_callable"
	typ      string // the global's type when not callable
	err      string // tests.json could not be read
}

type caseReport struct {
	records   int    // how many records named this case: more than one fails it
	malformed string // why its record is unusable, "" when it is not

	ms     float64
	typ    string          // type(x).__name__ of the return value
	value  json.RawMessage // its JSON text, nil when repr or raised is set
	repr   *string         // its repr, when it has no JSON form
	why    string          // why it has none
	raised *raisedReport
}

type raisedReport struct {
	Type    string   `json:"type"`
	MRO     []string `json:"mro"`
	Message string   `json:"message"`
	Line    int      `json:"line"`
}

// Bounds of what one record may carry, so that no record (the program can
// write its own) makes the daemon's answer or memory grow with it. Text
// fields past them are cut (parseLine), as the harness cuts its own (a
// value's JSON text at most 1 MiB, a traceback its last 64 KiB); other
// fields past them make the record forged.
const (
	maxReportName      = 512       // a class or type name, dotted
	maxReportText      = 4 << 10   // a message, why, error
	maxReportRepr      = 16 << 10  // a repr
	maxReportTraceback = 80 << 10  // a traceback
	maxReportValue     = 1<<20 + 1 // a value's JSON text
	maxCaseMs          = 1e9       // a case's duration: more than 11 days is no measurement
)

// record is any line of the channel; which fields count depends on T.
type record struct {
	T string `json:"t"`

	Type      string `json:"type"` // exception: its class; case: the value's type
	Message   string `json:"message"`
	Line      int    `json:"line"`
	Traceback string `json:"traceback"`

	N        *int   `json:"n"`
	Function string `json:"function"`
	Error    string `json:"error"`

	I      json.RawMessage `json:"i"` // parsed apart, strictly: a mistyped field must not move a record to another case
	Ms     *float64        `json:"ms"`
	Value  json.RawMessage `json:"value"`
	Repr   *string         `json:"repr"`
	Why    string          `json:"why"`
	Raised *raisedReport   `json:"raised"`

	Mime string  `json:"mime"` // display: the entry's kind
	Data *string `json:"data"` // its base64 or text; nil: dropped by the harness
}

// ParseReport reads the report channel's bytes (truncated: the daemon cut
// them at maxReportBytes) for a request whose tests are t (nil: none). It
// never fails: whatever it cannot use is ignored, or fails the case it names.
func ParseReport(data []byte, truncated bool, t *Tests) *Report {
	r := &Report{truncated: truncated}
	if t != nil {
		r.cases = make([]caseReport, len(t.Cases))
	}
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break // an unterminated line is never a record: it may be cut
		}
		r.parseLine(data[:i])
		data = data[i+1:]
	}
	return r
}

func (r *Report) parseLine(line []byte) {
	var rec record
	err := json.Unmarshal(line, &rec)
	if _, typeErr := err.(*json.UnmarshalTypeError); err != nil && !typeErr {
		return // not JSON, or not one object
	}
	// Every text comes from the jail: bounded here, once, so that no
	// sentence, detail or copy made of it later can grow with it.
	// The harness caps in characters, these in bytes: a text may arrive
	// longer than these and is cut the way the harness cuts it (a
	// traceback keeps its end, where the error is).
	rec.Message, rec.Traceback, rec.Error, rec.Why = capText(rec.Message, maxReportText), capTextTail(rec.Traceback, maxReportTraceback),
		capText(rec.Error, maxReportText), capText(rec.Why, maxReportText)
	if rec.Raised != nil {
		rec.Raised.Message = capText(rec.Raised.Message, maxReportText)
	}
	if rec.Repr != nil {
		r := capText(*rec.Repr, maxReportRepr)
		rec.Repr = &r
	}
	switch rec.T {
	case "exception":
		if err == nil && rec.Type != "" && len(rec.Type) <= maxReportName {
			r.Exception = &Exception{Type: rec.Type, Message: rec.Message, Line: max(rec.Line, 0), Traceback: rec.Traceback}
		}
	case "tests":
		if err == nil && r.started == nil && len(rec.Type) <= maxReportName && len(rec.Function) <= maxReportName {
			r.started = &testsRecord{function: rec.Function, typ: rec.Type, err: rec.Error}
			if rec.Error == "" && rec.N != nil && *rec.N != len(r.cases) {
				r.started.err = "it saw a different number of cases"
			}
		}
	case "end":
		r.ended = true
	case "display":
		r.addDisplay(&rec, err)
	case "case":
		i, ierr := strconv.Atoi(string(rec.I))
		if ierr != nil || i < 0 || i >= len(r.cases) {
			return
		}
		c := &r.cases[i]
		c.records++
		c.malformed = caseMalformed(&rec, err)
		if c.malformed != "" {
			return
		}
		c.typ, c.value, c.repr, c.why, c.raised = rec.Type, rec.Value, rec.Repr, rec.Why, rec.Raised
		if rec.Ms != nil && *rec.Ms >= 0 && *rec.Ms <= maxCaseMs { // NaN fails both
			c.ms = *rec.Ms
		}
	}
}

func caseMalformed(rec *record, err error) string {
	n := 0
	for _, set := range []bool{rec.Value != nil, rec.Repr != nil, rec.Raised != nil} {
		if set {
			n++
		}
	}
	switch {
	case err != nil:
		return "a field has the wrong type"
	case len(rec.Type) > maxReportName:
		return "its type name is too long"
	case len(rec.Value) > maxReportValue:
		return "its value is larger than the harness ever reports"
	case rec.Raised != nil && (len(rec.Raised.Type) > maxReportName ||
		slices.ContainsFunc(rec.Raised.MRO, func(c string) bool { return len(c) > maxReportName })):
		return "its exception is larger than the harness ever reports"
	case n != 1:
		return "it must have exactly one of value, repr and raised"
	case rec.Raised != nil && !plausibleMRO(rec.Raised):
		return "the exception's classes are not a class hierarchy"
	case rec.Raised == nil && rec.Type == "":
		return "the value has no type"
	}
	return ""
}

// UncaughtException is the result's "exception": the harness's exception
// record, unless the program ended well (exit 0), when such a record can
// only be the program's own doing (an atexit handler calling os._exit(0)
// after the traceback, or a forged record).
func (r *Report) UncaughtException(jail *nsjail.Result) *Exception {
	if r == nil || (jail != nil && jail.Status == nsjail.StatusOK) {
		return nil
	}
	return r.Exception
}

// maxMRO bounds the classes a raised exception may claim. Python's deepest
// built-in hierarchy has 5; a class that inherits from many exception
// classes passes the expected_exception of each, as `except` would catch it,
// but a record cannot claim more than a plausible hierarchy. The harness
// sends at most this many (harness_lib.py MAX_MRO: the class itself and its
// most general bases, where the built-in ones an expected_exception usually
// names are), so that a deeper real hierarchy is cut, not refused.
const maxMRO = 32

// plausibleMRO: the exception's classes could be a Python exception's MRO,
// as the harness reports it: itself first, BaseException last, each once.
func plausibleMRO(e *raisedReport) bool {
	n := len(e.MRO)
	if e.Type == "" || n == 0 || n > maxMRO || e.MRO[0] != e.Type || e.MRO[n-1] != "BaseException" {
		return false
	}
	seen := make(map[string]bool, n)
	for _, c := range e.MRO {
		if c == "" || seen[c] {
			return false
		}
		seen[c] = true
	}
	return true
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
