package daemon

// TEMPORARY: replaced by harness.go/tests.go (h/harness) at merge.

import (
	"encoding/json"

	"agentjail/nsjail"
)

type Tests struct {
	Function string     `json:"function"`
	Cases    []TestCase `json:"cases"`
}
type TestCase struct {
	Name              string                     `json:"name"`
	Args              []json.RawMessage          `json:"args"`
	Kwargs            map[string]json.RawMessage `json:"kwargs"`
	Expected          json.RawMessage            `json:"expected"`
	ExpectedType      string                     `json:"expected_type"`
	ExpectedException string                     `json:"expected_exception"`
}

func (t *Tests) Validate() error { return nil }

type Exception struct {
	Type      string `json:"type"`
	Message   string `json:"message"`
	Line      int    `json:"line"`
	Traceback string `json:"traceback"`
}
type TestsResult struct {
	Total     int          `json:"total"`
	Passed    int          `json:"passed"`
	Failed    int          `json:"failed"`
	AllPassed bool         `json:"all_passed"`
	Results   []TestResult `json:"results"`
}
type TestResult struct {
	Name       string  `json:"name"`
	Passed     bool    `json:"passed"`
	Output     string  `json:"output"`
	Detail     string  `json:"detail"`
	DurationMs float64 `json:"duration_ms"`
}
type Report struct{ Exception *Exception }

func HarnessProgram(code []byte, tests *Tests) ([]byte, string, []nsjail.File) {
	return code, "main.py", nil
}
func ParseReport(data []byte, truncated bool, t *Tests) *Report          { return &Report{} }
func (r *Report) Verdicts(t *Tests, jail *nsjail.Result) *TestsResult    { return nil }
func HarnessFeedback(exc *Exception, tr *TestsResult, t *Tests) []string { return nil }
