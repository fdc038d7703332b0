package harness

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"
	"unicode/utf8"

	"agentjail/nsjail"
)

// fuzzTests are n cases of f(i), one of each kind of check in turn: the
// value [1, {"a": 2.5}], the type int, ValueError, none.
func fuzzTests(n int) *Tests {
	t := &Tests{Function: "f"}
	for i := range n {
		c := TestCase{Args: []json.RawMessage{json.RawMessage(fmt.Sprint(i))}}
		switch i % 4 {
		case 0:
			c.Expected = json.RawMessage(`[1, {"a": 2.5}]`)
		case 1:
			c.ExpectedType = "int"
		case 2:
			c.ExpectedException = "ValueError"
		}
		t.Cases = append(t.Cases, c)
	}
	return t
}

// Bounds of what a report can make, whatever it holds: a cut text carries
// its "… (N bytes in all)" note besides its bytes.
const (
	maxNote     = 40
	maxDetail   = maxReportText + 4*maxReportName + 4*maxShownBytes + 4*maxNote + 512
	maxSentence = maxDetail + maxTestNameLen + maxShownBytes + 512
)

// FuzzParseReport: the report channel is written by the jail, so anything
// may come on it. ParseReport never panics and keeps only what its bounds
// allow, a record it takes is well formed, and the verdicts and feedback
// made of it are bounded, valid UTF-8 and encodable, one per case.
func FuzzParseReport(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, ncases uint8, truncated bool) {
		var tests *Tests // 0: a request without tests
		if n := int(ncases % 9); n > 0 {
			tests = fuzzTests(n)
		}
		r := ParseReport(data, truncated, tests)
		checkReportException(t, r.Exception)
		checkReportCases(t, r, tests)
		for _, jail := range []*nsjail.Result{
			{Status: nsjail.StatusOK},
			{Status: nsjail.StatusKilled, KillReason: nsjail.KillWallTimeout, ExitCode: 137},
		} {
			exc := r.UncaughtException(jail)
			tr := r.Verdicts(tests, jail)
			checkVerdicts(t, tr, tests)
			fb := ProgramFeedback(exc, tr, tests, nil)
			checkFeedback(t, exc, tr, fb)
			if utf8.Valid(data) { // a cut never splits a character
				checkUTF8(t, exc, tr, fb)
			}
		}
	})
}

// checkReportException: a report's exception, if any, is within bounds.
func checkReportException(t *testing.T, e *Exception) {
	if e == nil {
		return
	}
	switch {
	case e.Type == "" || len(e.Type) > maxReportName:
		t.Fatalf("exception type of %d bytes", len(e.Type))
	case len(e.Message) > maxReportText+maxNote || len(e.Traceback) > maxReportTraceback+maxNote:
		t.Fatalf("exception texts of %d and %d bytes", len(e.Message), len(e.Traceback))
	case e.Line < 0:
		t.Fatalf("exception line %d", e.Line)
	}
}

// checkReportCases: r has one case report per case of tests, and a
// record it takes is well formed and within bounds.
func checkReportCases(t *testing.T, r *Report, tests *Tests) {
	if tests == nil {
		if len(r.cases) != 0 {
			t.Fatalf("%d cases reported without tests", len(r.cases))
		}
	} else if len(r.cases) != len(tests.Cases) {
		t.Fatalf("%d case reports for %d cases", len(r.cases), len(tests.Cases))
	}
	for i, c := range r.cases {
		if c.records == 0 || c.malformed != "" {
			continue
		}
		set := 0
		for _, ok := range []bool{c.value != nil, c.repr != nil, c.raised != nil} {
			if ok {
				set++
			}
		}
		switch {
		case set != 1:
			t.Fatalf("case %d: %d of value, repr and raised", i, set)
		case len(c.typ) > maxReportName || len(c.value) > maxReportValue:
			t.Fatalf("case %d: type of %d bytes, value of %d", i, len(c.typ), len(c.value))
		case c.repr != nil && len(*c.repr) > maxReportRepr+maxNote:
			t.Fatalf("case %d: repr of %d bytes", i, len(*c.repr))
		case c.raised != nil && (!plausibleMRO(c.raised) || len(c.raised.Message) > maxReportText+maxNote):
			t.Fatalf("case %d: raised %+v", i, c.raised)
		case !(c.ms >= 0 && c.ms <= maxCaseMs):
			t.Fatalf("case %d: %v ms", i, c.ms)
		}
	}
}

// checkVerdicts: verdicts tr come with tests only, one per case, counted
// right, each bounded.
func checkVerdicts(t *testing.T, tr *TestsResult, tests *Tests) {
	if tests == nil {
		if tr != nil {
			t.Fatal("verdicts without tests")
		}
		return
	}
	if tr.Total != len(tests.Cases) || len(tr.Results) != tr.Total || tr.Passed+tr.Failed != tr.Total || tr.AllPassed != (tr.Failed == 0) {
		t.Fatalf("counts: %+v", tr)
	}
	for _, v := range tr.Results {
		switch {
		case len(v.Output) > maxOutputBytes+maxNote:
			t.Fatalf("output of %d bytes", len(v.Output))
		case v.Detail == "" || len(v.Detail) > maxDetail:
			t.Fatalf("detail of %d bytes", len(v.Detail))
		case math.IsNaN(v.DurationMs) || v.DurationMs < 0:
			t.Fatalf("duration %v", v.DurationMs)
		case v.Passed != (v.Detail == "OK"):
			t.Fatalf("passed %v with detail %q", v.Passed, v.Detail)
		}
	}
}

// checkFeedback: the feedback fb is a bounded number of bounded
// sentences, and it encodes with exc and tr.
func checkFeedback(t *testing.T, exc *Exception, tr *TestsResult, fb []string) {
	if len(fb) > 2+maxFeedbackFail+2 {
		t.Fatalf("%d feedback sentences", len(fb))
	}
	for _, s := range fb {
		if len(s) > maxSentence {
			t.Fatalf("a feedback sentence of %d bytes", len(s))
		}
	}
	if _, err := json.Marshal(struct {
		E  *Exception
		T  *TestsResult
		FB []string
	}{exc, tr, fb}); err != nil {
		t.Fatalf("not encodable: %v", err)
	}
}

// checkUTF8: of a report of valid UTF-8, every text made is valid UTF-8.
func checkUTF8(t *testing.T, exc *Exception, tr *TestsResult, fb []string) {
	texts := slices.Clone(fb)
	if exc != nil {
		texts = append(texts, exc.Type, exc.Message, exc.Traceback)
	}
	if tr != nil {
		for _, v := range tr.Results {
			texts = append(texts, v.Output, v.Detail)
		}
	}
	for _, s := range texts {
		if !utf8.ValidString(s) {
			t.Fatalf("a text of valid UTF-8 is not: %q", s)
		}
	}
}
