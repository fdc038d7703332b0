package harness

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"

	"agentjail/daemon/internal/jsontext"
	"agentjail/nsjail"
)

// Sessions. A session's jail runs session.py instead of boot.py: a server
// that runs each call's code in one interpreter and one __main__
// namespace, and for each call does what the harness does for a run (the
// uncaught exception's record and traceback, the tests, on a report pipe
// of the call's own), with the harness's own code (harness_lib.py, loaded
// once). The protocol between it and the daemon is drawn in
// nsjail/session_linux.go; the call's payload and the end record's own
// fields are here.

//go:embed session.py
var sessionPy []byte

const sessionName = "agentjail_session.py"

// SessionProgram returns what a session's jail runs: session.py as the
// program, and the harness's files under /code, which every run's jail
// has too (so a session fits the jails prepared or forked ahead).
func SessionProgram() (program []byte, programName string, codeFiles []nsjail.File) {
	return sessionPy, sessionName, SharedFiles()
}

// callHead is the first line of a call's payload.
type callHead struct {
	Name  string   `json:"name"`  // the code's file name in tracebacks: "<call N>"
	Code  int      `json:"code"`  // the code's bytes, first after the line
	Tests int      `json:"tests"` // the tests' JSON bytes after them; -1: no tests
	Files [][2]any `json:"files"` // each file's path (cleaned) and size, in order, after them
	// Command is the call's argv instead of code (command.go); Code is 0.
	Command []string `json:"command,omitempty"`
}

// CallName is the file name of call n's code (1 for a session's first
// call), as its tracebacks show it.
func CallName(n int) string { return fmt.Sprintf("<call %d>", n) }

// CallPayload is what session.py reads for one call: a line of JSON
// (callHead), then the code, the tests' JSON (tests.json's: the function
// and each case's arguments, never an expected value) and the files'
// bytes, back to back. tests must have passed Validate and files
// nsjail.ValidateFiles.
func CallPayload(name string, code []byte, tests *Tests, files []nsjail.File) []byte {
	var t []byte
	head := callHead{Name: name, Code: len(code), Tests: -1, Files: [][2]any{}}
	if tests != nil {
		t = tests.jailJSON()
		head.Tests = len(t)
	}
	return head.payload(code, t, files)
}

// payload is the call's payload with this head.
func (head callHead) payload(code, t []byte, files []nsjail.File) []byte {
	size := len(code) + len(t)
	for _, f := range files {
		p, _ := nsjail.CleanRelPath(f.Path)
		head.Files = append(head.Files, [2]any{p, len(f.Content)})
		size += len(f.Content)
	}
	line, _ := jsontext.Marshal(head) // a line: jsontext ends it with "\n", and escapes every control character
	out := slices.Grow(line, size)
	out = append(append(out, code...), t...)
	for _, f := range files {
		out = append(out, f.Content...)
	}
	return out
}

// CallEnd is what session.py's end record says beyond the call's status.
type CallEnd struct {
	// Value is the repr of the code's trailing expression (session.py
	// cuts it at 16384 characters); nil when the code does not end in
	// one, or the call did not get that far.
	Value *string
	// Refused is the call's file that session.py could not write (the
	// code did not run): its index in the request's files and why.
	Refused *RefusedFile
	// Caught: the call's code took agentjail's interrupt (a
	// KeyboardInterrupt raised in it) and did not end by it: it caught
	// it and went on. The program's word: it only shapes the feedback.
	Caught bool
}

// RefusedFile is a call's file that could not be written in the session.
type RefusedFile struct {
	I     int    `json:"i"`
	Error string `json:"error"`
}

// maxValueBytes bounds a value the daemon passes on: session.py cuts at
// 16384 characters (at most 4 bytes each); a forged record may claim more.
const maxValueBytes = 64 << 10

// ParseCallEnd reads the end record's own fields. The record comes from
// the jail: a field that is not what session.py writes is left out.
func ParseCallEnd(raw []byte) CallEnd {
	var rec struct {
		Value   *string      `json:"value"`
		Refused *RefusedFile `json:"refused"`
		Caught  bool         `json:"caught"`
	}
	if json.Unmarshal(raw, &rec) != nil {
		return CallEnd{}
	}
	if rec.Value != nil {
		v := capText(*rec.Value, maxValueBytes)
		rec.Value = &v
	}
	if rec.Refused != nil {
		rec.Refused.Error = capText(rec.Refused.Error, maxReportText)
	}
	return CallEnd{Value: rec.Value, Refused: rec.Refused, Caught: rec.Caught}
}
