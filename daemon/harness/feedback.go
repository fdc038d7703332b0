package harness

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"agentjail/daemon/internal/jsontext"
	"agentjail/nsjail"
	"agentjail/seccomp"
)

// Installed is what an environment has, for the feedback about an import
// that failed: its name, and the top-level modules it has beyond the
// standard library. nil: not known (the hint then says less).
type Installed struct {
	Environment string
	Packages    []string
}

// ProgramFeedback gives the sentences of docs/contract.md §3 for the uncaught
// exception (its type, line and a hint) and for the failed tests: how many
// failed, up to five of them with their call and what differed, and why the
// cases that did not run did not. The expected values they quote are the
// caller's own. Empty when there is no exception and every test passed.
// env tells a failed import what the environment has.
func ProgramFeedback(exc *Exception, tr *TestsResult, t *Tests, env *Installed) []string {
	return programFeedback(exc, tr, t, env, false)
}

// programFeedback is ProgramFeedback for a run (session false) or a call
// of a session, where a name an earlier call defined is defined: there the
// hint that runs share no state is left out (CallFeedback says what a
// session keeps instead).
func programFeedback(exc *Exception, tr *TestsResult, t *Tests, env *Installed, session bool) []string {
	fb := []string{}
	said := map[string]bool{} // the situation hints given so far: each once
	if exc != nil {
		s := exceptionSentence(exc, env)
		if h := situationHint(exc.Type+": "+exc.Message, session); h != "" {
			s += " " + h
			said[h] = true
		}
		fb = append(fb, s)
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
		s := sentence(fmt.Sprintf("Test '%s'%s failed: %s", r.Name, call, strings.TrimPrefix(r.Detail, "failed: ")))
		if h := situationHint(r.Detail, session); h != "" && !said[h] {
			s += " " + h
			said[h] = true
		}
		listed = append(listed, s)
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
			jsontext.WriteString(&q, k)
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
		jsontext.WriteString(b, v)
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
func exceptionSentence(e *Exception, env *Installed) string {
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
	h := exceptionHints[bare]
	if bare == "ModuleNotFoundError" || bare == "ImportError" {
		h = importHint(bare, e.Message, env)
	}
	if h != "" {
		s += " " + h
	}
	return s
}

var (
	noModule   = regexp.MustCompile(`^No module named '([^']+)'`)
	cannotName = regexp.MustCompile(`^cannot import name '([^']+)' from '([^']+)'`)
)

// maxListedPackages bounds the packages a hint names.
const maxListedPackages = 20

// importHint says what is true of a failed import: the module is not
// installed in this environment (and what is), a shared library it needs
// did not load, a library could not start its threads, or the name
// imported does not exist in a module that is installed. Never "standard
// library only" unless the environment has nothing else.
func importHint(typ, msg string, env *Installed) string {
	where := "the sandbox's environment"
	if env != nil && env.Environment != "" {
		where = fmt.Sprintf("environment '%s'", env.Environment)
	}
	switch {
	case strings.Contains(msg, "cannot open shared object file") || strings.Contains(msg, "undefined symbol") ||
		strings.Contains(msg, ".so:") || strings.Contains(msg, "DLL load failed"):
		return fmt.Sprintf("The module is installed in %s, but a shared library it needs did not load (the message names it): that is the environment's fault, not the program's; tell its operator.", where)
	case strings.Contains(msg, "pthread_create") || strings.Contains(msg, "Resource temporarily unavailable") || strings.Contains(msg, "can't start new thread"):
		return "A library could not start its threads: the jail's process and thread limit (limits.pids, --pids) was reached; ask for more, or set OPENBLAS_NUM_THREADS=1 (and OMP_NUM_THREADS=1) in env."
	}
	if m := cannotName.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("'%s' is installed, but has no '%s': check the name and that it exists in this version of '%s'.", m[2], m[1], m[2])
	}
	m := noModule.FindStringSubmatch(msg)
	if m == nil {
		if typ == "ModuleNotFoundError" {
			return fmt.Sprintf("The module is not installed in %s: check the name imported.", where)
		}
		return "Check the name imported."
	}
	top, _, isSub := strings.Cut(m[1], ".")
	switch {
	case env == nil:
		return fmt.Sprintf("'%s' is not installed in %s. %s If it is a package, check the name, or do without it.", m[1], where, notSentHint(m[1]))
	case isSub && slices.Contains(env.Packages, top):
		return fmt.Sprintf("'%s' is installed in %s, but has no submodule '%s': check the name imported.", top, where, m[1])
	case len(env.Packages) == 0:
		return fmt.Sprintf("Only the Python standard library is installed in %s. %s If it is a package, do without third-party packages such as '%s'.", where, notSentHint(m[1]), top)
	}
	list := env.Packages
	more := ""
	if len(list) > maxListedPackages {
		list, more = list[:maxListedPackages], fmt.Sprintf(" and %d more", len(env.Packages)-maxListedPackages)
	}
	return fmt.Sprintf("'%s' is not installed in %s, which has the standard library and %s%s. %s If it is a package, use one of those installed (or another environment, if the sandbox has one with it).", top, where, strings.Join(list, ", "), more, notSentHint(m[1]))
}

// The hints of situationHint.
const (
	// A full /workspace: ENOSPC, which Python raises as OSError.
	hintNoSpace = "/workspace, /tmp and /dev/shm share one file system of the jail's tmp_bytes limit (--tmp-size on the command line) and at most 4096 files: write less, delete what is no longer needed, or ask for a larger tmp_bytes."
	// A file past RLIMIT_FSIZE: python3 ignores SIGXFSZ and gets EFBIG.
	hintFileTooLarge = "A file may not grow past the jail's file_size_bytes limit (--file-size on the command line): write less, or ask for a larger file_size_bytes."
	// A name not defined: often a variable of an earlier run.
	hintNoSharedState = "Runs share no state: a name defined by an earlier run is not defined in this one. To keep state between runs, use a session (POST /v1/sessions, agentjail session, client.session() in Python)."
)

// situationHint is a hint about the sandbox for an exception that its
// text ("Type: message", or a test's detail that quotes it) shows to come
// from one: a limit of the jail that the program ran into, or a name that
// an earlier run defined (not in a session: session). "" for any other.
func situationHint(text string, session bool) string {
	switch {
	case strings.Contains(text, "[Errno 28]") || strings.Contains(text, "No space left on device"):
		return hintNoSpace
	case strings.Contains(text, "[Errno 27]") || strings.Contains(text, "File too large"):
		return hintFileTooLarge
	case notDefined.MatchString(text):
		if session {
			return ""
		}
		return hintNoSharedState
	case noNetwork.MatchString(text):
		return hintNoNetwork
	}
	return ""
}

// notDefined is the text of a NameError whose name the program never
// defined: "name 'x' is not defined" (not a free variable without a
// value, which the program defines).
var notDefined = regexp.MustCompile(`NameError: name '[^']*' is not defined`)

var exceptionHints = map[string]string{
	"SyntaxError":         "Fix the syntax at that line; an unclosed bracket or quote on an earlier line can also cause it.",
	"IndentationError":    "Indent each block consistently (4 spaces), and do not mix tabs and spaces.",
	"TabError":            "Indent with spaces only; do not mix tabs and spaces.",
	"NameError":           "A name is used before it is defined, or is misspelled: check its spelling and that it is defined or imported before this line.",
	"UnboundLocalError":   "A local variable is read before it is assigned: assign it on every path first, or declare it global or nonlocal.",
	"TypeError":           "A value of the wrong type was used, or a function was called with the wrong number of arguments: check the types and the signature.",
	"ValueError":          "A function got a value of the right type but a wrong value (for example int('abc')): validate or convert the input first.",
	"IndexError":          "An index is past the end of a sequence: indices run from 0 to len-1; check the bounds and empty inputs.",
	"KeyError":            "The dictionary has no such key: check `key in d` first, or use d.get(key, default).",
	"AttributeError":      "The object has no such attribute or method: check its type (it may be None) and the spelling.",
	"ZeroDivisionError":   "A division or modulo by zero: guard against a zero divisor.",
	"RecursionError":      "The recursion is too deep or never ends: check the base case, or use a loop instead.",
	"ModuleNotFoundError": "Only the Python standard library is available in the sandbox: do without third-party packages.",
	"ImportError":         "Only the Python standard library is available in the sandbox: check the name imported.",
	"AssertionError":      "An assert statement failed: the condition it checks is false.",
	"FileNotFoundError":   "The program runs in /workspace, which holds only the files given with the request.",
	"PermissionError":     "The sandbox does not allow this operation; only /workspace and /tmp are writable.",
	"MemoryError":         "The program ran out of memory: use less, for example by processing data in chunks.",
	"OverflowError":       "A number is too large for this operation (often a float): use integers or smaller values.",
	"EOFError":            "input() read past the end of stdin: the program's stdin is empty unless the request gives one.",
	"StopIteration":       "next() was called on an exhausted iterator: give next() a default, or check for the end first.",
	"NotImplementedError": "A function the program calls is not implemented.",
	"UnicodeDecodeError":  "Bytes were decoded with the wrong encoding: give the right one, or errors=\"replace\".",
	"JSONDecodeError":     "The text parsed is not valid JSON.",
}

// JailFeedback gives the sentences of docs/contract.md §3 about what the jail
// did to the program (a limit that killed it, a signal, a forbidden system
// call, refused forks), which an automated repair loop can act on. Empty
// when the program ended well.
func JailFeedback(r *nsjail.Result) []string {
	fb := []string{}
	if say := killSentences[r.KillReason]; say != nil {
		fb = append(fb, say(r))
	}
	if r.Status == nsjail.StatusSignaled {
		fb = append(fb, fmt.Sprintf("The program crashed with signal %s.", unix.SignalName(r.Signal)))
	}
	if r.Seccomp != nil && r.KillReason != nsjail.KillSeccomp {
		fb = append(fb, fmt.Sprintf("The forbidden system call %s failed with EPERM (PermissionError); the sandbox does not allow it, so do without it.", callName(r.Seccomp.Syscall, r.Seccomp.Number, r.Seccomp.Detail)))
	}
	if r.PidsMaxHits > 0 {
		fb = append(fb, fmt.Sprintf("Starting a process or thread failed %d time(s) because the jail's process limit was reached; start fewer processes or threads.", r.PidsMaxHits))
	}
	if r.Status != nsjail.StatusOK && pipFailed(r) {
		fb = append(fb, hintNoPip)
	}
	return fb
}

// seccompKill says why the supervisor ended the jail: a call of a foreign
// ABI (never allowed), more forbidden calls than a run may make (the
// daemon answers each), or the first forbidden call under "kill".
func seccompKill(rep *seccomp.Report) string {
	total := 0
	if rep != nil {
		for _, c := range rep.Calls {
			total += c.Count
			if c.ABI != "" {
				return fmt.Sprintf("The program was killed because it made a system call of a foreign ABI (%s, number %d), which the sandbox never allows: use the normal 64-bit system calls (no int 0x80, no x32).", c.ABI, c.Number)
			}
		}
	}
	switch {
	case total > seccomp.MaxNotifications:
		return fmt.Sprintf("The program was killed because it made more than %d forbidden system calls (%d, the most frequent %s); each fails with EPERM, so stop retrying it.", seccomp.MaxNotifications, total, mostFrequent(rep))
	case rep != nil:
		return fmt.Sprintf("The program was killed because it made the forbidden system call %s; the sandbox does not allow it, so do without it.", callName(rep.Syscall, rep.Number, rep.Detail))
	}
	return "The program was killed by the sandbox's system call filter."
}

func mostFrequent(rep *seccomp.Report) string {
	best := rep.Calls[0]
	for _, c := range rep.Calls {
		if c.Count > best.Count {
			best = c
		}
	}
	return callName(best.Syscall, best.Number, best.Detail)
}

// callName names a forbidden call with the arguments the filter forbade
// it for: socket(AF_INET, SOCK_RAW).
func callName(name string, nr int, detail string) string {
	switch {
	case name == "":
		return fmt.Sprintf("number %d", nr)
	case detail != "":
		return name + "(" + detail + ")"
	}
	return name
}

func peak(r *nsjail.Result) string {
	if r.PeakMemoryBytes < 0 {
		return "unknown"
	}
	return Bytes(r.PeakMemoryBytes)
}

// Bytes formats a size for people: "9.1 MiB".
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Duration formats a time for people: "31 ms", "0.4 s".
func Duration(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}
