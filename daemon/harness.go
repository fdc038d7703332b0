package daemon

// # The harness
//
// Every run executes the harness, not the submitted code: the jail runs
// `python3 -I -u /code/agentjail_harness.py`, and the harness runs
// /code/main.py as __main__ exactly as `python3 -I -u /code/main.py` would
// (a fresh __main__ module in sys.modules, __file__, sys.argv, the same
// stdout, stderr and exit status, tracebacks without the harness's frames).
// When the request has tests it then calls the function once per case with
// the arguments of /code/tests.json, which holds the function's name and each
// case's args and kwargs: never an expected value, an expected type or a
// case name. The harness judges nothing; it reports what it saw on the
// report channel, and Verdicts judges outside the jail.
//
// Its files (harness/): boot.py is the program; it loads the code of
// harness.py (the path every run takes: run main.py as __main__) and, only
// for an uncaught exception or tests, harness_lib.py. python compiles its
// program on every start, at about 4 us a line of code, so boot.py is short
// and loads that code as agentjail's build compiled it (harness.bin) when
// the jail's python has the same bytecode magic number, and compiles the
// sources otherwise. main.py itself is compiled through exec() rather than
// compile(), whose first call costs 0.4 ms. Measured on this project's
// machines (python3.11, 400 interleaved runs, medians): the harness adds
// 0.24 ms to python's 5.5 ms for a `pass` program without tests, importing
// nothing python has not already imported (1.2 ms when it must compile its
// sources), and about 0.6 ms for a program with three test cases.
//
// What differs from plain python: the harness's frames are below the
// program's module frame (sys._getframe(1) at the top level, inspect.stack(),
// traceback.print_stack() and a warning with a stacklevel past the top level
// see them) and take 5 levels of the recursion limit. A source python cannot
// decode (a bad coding cookie, invalid UTF-8, a NUL byte) is handed to
// plain python3 by execve, so its output is python's own; it sends no
// record.
//
// # The report channel
//
// File descriptor 3 of the jail's python3 is the write end of a pipe to the
// daemon, which reads at most MaxReportBytes of it. The harness makes it
// non-inheritable before anything else, so a child process never holds it,
// and writes nothing from a process the program forked. It carries JSON
// objects, one per line (ASCII, ending in "\n"); "t" names the record:
//
//	{"t":"exception","type":"ZeroDivisionError","message":"division by zero","line":3,"traceback":"Traceback (most recent call last):\n…"}
//	    The program ended by an uncaught exception (not SystemExit), written
//	    just before the traceback is printed. type is the class name as python
//	    prints it (module-qualified unless builtins or __main__); line is the
//	    line of the innermost frame in main.py, or a SyntaxError's own line,
//	    0 when neither exists; traceback is the text printed, harness frames
//	    removed (its last 64 KiB).
//	{"t":"tests","n":3,"function":"ok"}
//	    The program ran to its end and the tests begin. function is "ok",
//	    "missing" (main.py defines no such global) or "not_callable" (then
//	    "type" is its type name), in which case no case record follows.
//	{"t":"tests","error":"JSONDecodeError: …"}
//	    tests.json could not be read; no case record follows.
//	{"t":"case","i":0,"ms":0.0123,"type":"int","value":3}
//	    Case i (0-based, in tests.json order, a plain integer) returned a value; value is its
//	    JSON text (json.dumps with allow_nan=False: tuples become lists, dict
//	    keys become strings), type its type(x).__name__, ms the duration of
//	    the call.
//	{"t":"case","i":1,"ms":0.01,"type":"generator","repr":"<generator object f at 0x7f…>","why":"Object of type generator is not JSON serializable"}
//	    Case i returned a value with no JSON form (or whose conversion raised,
//	    or whose JSON text is over 1 MiB): repr is its reprlib-bounded repr,
//	    why the reason.
//	{"t":"case","i":2,"ms":0.02,"raised":{"type":"ValueError","mro":["ValueError","Exception","BaseException"],"message":"…","line":4}}
//	    The call raised (any BaseException: SystemExit and KeyboardInterrupt
//	    too; a case never stops the others); mro names the exception's classes
//	    as type does, itself first, BaseException last, object left out (at
//	    most 32); line as for "exception".
//	{"t":"end"}
//	    Every case was called.
//
// Nothing in the jail is trusted: the submitted code runs in the harness's
// process and can write any of these records itself, or make the harness
// write what it likes. So the records carry observations, never verdicts,
// and an observation the code forges gains it no more than returning that
// value or raising that exception would have, which needs the right value
// in the first place. ParseReport is strict: a line that is not a whole
// record is ignored, a case with more than one record or a malformed one
// fails, a case without a record fails with the reason the jail's result
// gives. (What no report format can prevent: a real exception class that
// inherits from several exception classes passes the expected_exception of
// each, as `except` would catch it.)

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"slices"
	"strconv"

	"agentjail/nsjail"
)

// The harness's files, and their names under /code.
var (
	//go:embed harness/boot.py
	harnessBoot []byte // the program
	//go:embed harness/harness.py
	harnessRun []byte
	//go:embed harness/harness_lib.py
	harnessLib []byte
	// harnessBin is harness.py and harness_lib.py compiled by Debian 12's
	// python3.11 (marshal, after the magic number of its bytecode), which
	// boot.py loads instead of compiling the sources when it runs on a
	// python with the same magic number: compiling them takes 0.5 ms of
	// every run. TestEmbeddedHarnessCodeIsCurrent fails when it is stale;
	// `go test ./daemon -run TestEmbeddedHarnessCodeIsCurrent -update`
	// builds it again.
	//
	//go:embed harness/harness.bin
	harnessBin []byte
)

const (
	harnessName    = "agentjail_harness.py" // boot.py
	harnessRunName = "agentjail_harness_run.py"
	harnessLibName = "agentjail_harness_lib.py"
	harnessBinName = "agentjail_harness.bin"
	mainName       = "main.py"
	testsName      = "tests.json"
)

// MaxReportBytes is how much of the report channel the jail returns (the
// jail's own cap); a report cut there fails the cases it did not reach.
const MaxReportBytes = nsjail.MaxReportBytes

// HarnessProgram returns what the jail runs for one request: the harness as
// the entry program and the read-only files it reads under /code (the
// submitted code as main.py, the rest of the harness and, when tests is not
// nil, tests.json). tests must have passed Validate. The harness's files
// share the embedded bytes: nothing writes a Spec's contents.
func HarnessProgram(code []byte, tests *Tests) (program []byte, programName string, codeFiles []nsjail.File) {
	codeFiles = append([]nsjail.File{{Path: mainName, Content: code}}, harnessFiles...)
	if tests != nil {
		codeFiles = append(codeFiles, nsjail.File{Path: testsName, Content: tests.jailJSON()})
	}
	return harnessBoot, harnessName, codeFiles
}

// harnessFiles are the harness's files beside the boot program.
var harnessFiles = []nsjail.File{
	{Path: harnessRunName, Content: harnessRun},
	{Path: harnessLibName, Content: harnessLib},
	{Path: harnessBinName, Content: harnessBin},
}

// harnessShared are the files under /code that every request's jail has:
// the boot program and the harness (a prepared jail holds them already).
var harnessShared = append([]nsjail.File{{Path: harnessName, Content: harnessBoot}}, harnessFiles...)

// Exception is the uncaught exception of CONTRACT.md §3.
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
}

// ParseReport reads the report channel's bytes (truncated: the daemon cut
// them at MaxReportBytes) for a request whose tests are t (nil: none). It
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
