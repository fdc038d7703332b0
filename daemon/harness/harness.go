// Package harness is what runs around the submitted code in every jail,
// and what the daemon makes of what it reports: the harness's Python files
// (embedded), the parser of its report channel, the test verdicts judged
// from that report outside the jail, and the feedback sentences of a
// result. It is pure: it starts no process and needs no privilege.
//
// # The harness
//
// Every run executes the harness, not the submitted code: the jail runs
// `python3 -I -u /code/agentjail_harness.py`, and the harness runs
// /code/main.py as __main__ exactly as `python3 -I -u /code/main.py` would
// (a fresh __main__ module in sys.modules, __file__, sys.argv, the same
// stdout, stderr and exit status, tracebacks without the harness's frames),
// but for sys.path: the working directory (/workspace, the request's files)
// is first on it, as the program's directory is for `python3 main.py`, so a
// program imports the modules it was sent. It joins sys.path only once
// python has started, so no file of it runs at start-up; the harness's own
// imports after that take python's modules, never a file of the workspace
// (harness_lib.py's _std), so a json.py or traceback.py sent with the
// request shadows the module for the program only.
// When the request has tests it then calls the function once per case with
// the arguments of /code/tests.json, which holds the function's name and each
// case's args and kwargs: never an expected value, an expected type or a
// case name. The harness judges nothing; it reports what it saw on the
// report channel, and Verdicts judges outside the jail.
//
// Its files (harness/): boot.py is the program; it loads the code of
// harness.py (the path every run takes: run main.py as __main__) and, only
// for an uncaught exception or tests, harness_lib.py. python compiles its
// program on every start, at a cost that grows with each line of code, so
// boot.py is short and loads that code as agentjail's build compiled it
// (harness.bin) when the jail's python has the same bytecode magic number,
// and compiles the sources otherwise. main.py itself is compiled through
// exec() rather than compile(), whose first call is slow; the harness
// imports nothing python has not already imported. What the harness adds
// to a run is measured in BENCHMARKS.md.
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
// daemon, which reads at most maxReportBytes of it. The harness makes it
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
//	{"t":"display","mime":"image/png","data":"iVBORw0…"}
//	    A rich output, in order (display.go): a matplotlib figure that
//	    plt.show() showed or that was open at the program's end (PNG, data
//	    in base64), or, in a session's call, the trailing value's
//	    _repr_png_, _repr_html_ or _repr_markdown_ (text/html and
//	    text/markdown: data is the text). Past the harness's bounds (8 MiB,
//	    32 entries) "data" is left out and "bytes" gives the entry's size:
//	    the daemon reports the display as cut. matplotlib is never imported
//	    for it: plt.show() is patched when the program imports pyplot (a
//	    finder first on sys.meta_path), or at the start when a warm zygote
//	    preloaded it.
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
package harness

import (
	_ "embed"
	"slices"

	"agentjail/nsjail"
)

// The harness's files, and their names under /code.
var (
	//go:embed boot.py
	harnessBoot []byte // the program
	//go:embed harness.py
	harnessRun []byte
	//go:embed harness_lib.py
	harnessLib []byte
	// harnessBin is harness.py and harness_lib.py compiled by Debian 12's
	// python3.11 (marshal, after the magic number of its bytecode), which
	// boot.py loads instead of compiling the sources when it runs on a
	// python with the same magic number: compiling them would cost every
	// run. TestEmbeddedHarnessCodeIsCurrent fails when it is stale;
	// `go test ./daemon/harness -run TestEmbeddedHarnessCodeIsCurrent -update`
	// builds it again.
	//
	//go:embed harness.bin
	harnessBin []byte
	//go:embed warm.py
	harnessWarm []byte
)

const (
	harnessName     = "agentjail_harness.py" // boot.py
	harnessRunName  = "agentjail_harness_run.py"
	harnessLibName  = "agentjail_harness_lib.py"
	harnessBinName  = "agentjail_harness.bin"
	harnessWarmName = "agentjail_harness_warm.py"
	mainName        = "main.py"
	testsName       = "tests.json"
)

// maxReportBytes is how much of the report channel the jail returns (the
// jail's own cap); a report cut there fails the cases it did not reach.
const maxReportBytes = nsjail.MaxReportBytes

// Program returns what the jail runs for one request: the harness as
// the entry program and the read-only files it reads under /code (the
// submitted code as main.py, the rest of the harness and, when tests is not
// nil, tests.json). tests must have passed Validate. The harness's files
// share the embedded bytes: nothing writes a Spec's contents.
func Program(code []byte, tests *Tests) (program []byte, programName string, codeFiles []nsjail.File) {
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

// WarmEntry is the warm entry's file: a zygote (nsjail.ZygoteSpec.Entry)
// loads it once, and each warm run calls its main() instead of running
// the boot program (warm.py). The zygote's Code are SharedFiles and it.
func WarmEntry() nsjail.File { return nsjail.File{Path: harnessWarmName, Content: harnessWarm} }

// SharedFiles are the files under /code that every request's jail has:
// the boot program and the harness (a prepared jail holds them already,
// nsjail.PreparedTemplate). They share the embedded bytes: nothing may
// write their contents.
func SharedFiles() []nsjail.File {
	return slices.Concat([]nsjail.File{{Path: harnessName, Content: harnessBoot}}, harnessFiles)
}
