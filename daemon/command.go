package daemon

import (
	_ "embed"
	"fmt"
	"strings"
	"unicode/utf8"

	"agentjail/daemon/harness"
	"agentjail/nsjail"
)

// A request's command (docs/contract.md §9) is an argv run in the jail
// instead of Python code. In a run, a small launcher (command_launch.py)
// starts as the program would and execs the argv, found by PATH inside the
// jail; a program that is not there exits 127 and says so on the report
// channel. A command has no warm interpreter: it always runs cold, and the
// result's start says "cold". In a session, session.py runs it as a
// subprocess of the session's server (harness.CommandPayload).

//go:embed command_launch.py
var commandLaunch []byte

// commandLaunchName is the launcher's file name under /code.
const commandLaunchName = "agentjail_command.py"

// maxCommandArgs caps a command's argv.
const maxCommandArgs = 4096

// missingMark is what the launcher reports when the program is missing.
const missingMark = "missing\n"

// checkProgram checks that exactly one of code and command is given, and
// the one given; tests go with code only.
func checkProgram(code *string, command []string, tests *harness.Tests) error {
	switch {
	case code != nil && command != nil:
		return &nsjail.FieldError{Field: "command", Msg: "give code or command, not both"}
	case code == nil && command == nil:
		return &nsjail.FieldError{Field: "code", Msg: "is required (or command: an argv such as [\"bash\", \"-c\", \"ls\"])"}
	case code != nil:
		if !utf8.ValidString(*code) || strings.IndexByte(*code, 0) >= 0 {
			return &nsjail.FieldError{Field: "code", Msg: "must be UTF-8 text without NUL bytes"}
		}
		return nil
	}
	if tests != nil {
		return &nsjail.FieldError{Field: "tests", Msg: "test a function of Python code; a command has none (give code, or leave tests out)"}
	}
	return checkCommand(command)
}

// checkCommand checks a command's argv.
func checkCommand(command []string) error {
	if len(command) == 0 {
		return &nsjail.FieldError{Field: "command", Msg: "must be a non-empty array of strings, the program first, e.g. [\"ls\", \"-la\"]"}
	}
	if len(command) > maxCommandArgs {
		return &nsjail.FieldError{Field: "command", Msg: fmt.Sprintf("%d arguments, at most %d", len(command), maxCommandArgs)}
	}
	if command[0] == "" {
		return &nsjail.FieldError{Field: "command[0]", Msg: "the program's name is empty"}
	}
	n := 0
	for i, a := range command {
		if !utf8.ValidString(a) || strings.IndexByte(a, 0) >= 0 {
			return &nsjail.FieldError{Field: fmt.Sprintf("command[%d]", i), Msg: "must be UTF-8 text without NUL bytes"}
		}
		n += len(a) + 1
	}
	if n > nsjail.MaxCodeBytes {
		return &nsjail.FieldError{Field: "command", Msg: fmt.Sprintf("%d bytes, at most %d", n, nsjail.MaxCodeBytes)}
	}
	return nil
}

// commandSpec makes s run the command, cold.
func commandSpec(s *nsjail.Spec, command []string) {
	s.Program, s.ProgramName, s.CodeFiles = commandLaunch, commandLaunchName, nil
	s.Args = append([]string{}, command...)
	s.Start = nsjail.StartCold
}

// missingProgram is the feedback of a command whose program is missing,
// or "".
func missingProgram(report []byte, command []string, env string) string {
	if string(report) != missingMark {
		return ""
	}
	return fmt.Sprintf("the program '%s' is not installed in environment '%s'; the environment's /usr decides which programs exist (check with [\"bash\", \"-c\", \"compgen -c\"]).", command[0], env)
}

// commandResult is a command's result: the jail's, with the missing
// program's feedback first and the collected files; no exception, tests
// or display.
func (j *Job) commandResult(res *Result, jr *nsjail.Result) *Result {
	res.Feedback = commandFeedback(res.Feedback, jr.Report, j.command, res.Environment)
	if res.Status == string(nsjail.StatusOK) {
		res.Feedback = []string{}
	}
	for _, f := range jr.Files {
		res.Files = append(res.Files, resultFile(f))
	}
	return res
}

// payload is the call's payload: its code's, or its command's.
func (q *CallRequest) payload(name string, files []nsjail.File) []byte {
	if q.Command != nil {
		return harness.CommandPayload(name, q.Command, files)
	}
	return harness.CallPayload(name, []byte(*q.Code), q.Tests, files)
}

// commandFeedback is a command's feedback: the missing program's first.
func commandFeedback(fb []string, report []byte, command []string, env string) []string {
	if m := missingProgram(report, command, env); m != "" {
		return append([]string{m}, fb...)
	}
	return fb
}
