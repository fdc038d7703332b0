package harness

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

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

	// Two huge integers are judged in about the time the same digits take
	// as strings (reading the record): linear, not big.Int's quadratic
	// parse. Relative to this machine's own speed, so that an emulated CPU
	// (the VM suite) passes too; a quadratic judge takes minutes.
	digits := strings.Repeat("7", 8<<20)
	judge := func(typ, quote string) (bool, time.Duration) {
		start := time.Now()
		r := verdict(t, TestCase{Expected: json.RawMessage(`3`)}, `"ms":0,"type":"`+typ+`","value":`+quote+digits+quote+`}`)
		r2 := verdict(t, TestCase{Expected: json.RawMessage(`3.5`)},
			`"ms":0,"type":"`+typ+`","value":`+quote+digits[:1<<20]+quote+`}`)
		return r.Passed || r2.Passed, time.Since(start)
	}
	_, asText := judge("str", `"`)
	passed, asInts := judge("int", "")
	if asInts > 5*asText+100*time.Millisecond {
		t.Errorf("judging two huge integers took %v, against %v for the same digits as strings", asInts, asText)
	}
	if passed {
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

// A case's raised exception message is cut where the record is read, like
// every text from the jail, before anything copies it.
func TestRaisedMessageCutWhereRead(t *testing.T) {
	line := fmt.Sprintf(`{"t":"case","i":0,"type":"ValueError","raised":{"type":"ValueError","mro":["ValueError","Exception","BaseException"],"message":%q,"line":1}}`+"\n",
		strings.Repeat("x", 1<<20))
	r := ParseReport([]byte(line), false, &Tests{Cases: []TestCase{{}}})
	c := r.cases[0]
	if c.malformed != "" || c.raised == nil {
		t.Fatalf("record not taken: malformed %q, raised %v", c.malformed, c.raised)
	}
	if n := len(c.raised.Message); n > maxReportText+64 {
		t.Errorf("the message is stored with %d bytes, over %d", n, maxReportText)
	}
}
