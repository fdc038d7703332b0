package main

import "io"

// commandFlag is `agentjail run --command -- PROGRAM ARGS...`: the
// positional arguments are an argv run in the jail instead of Python code
// (docs/contract.md §9); PROGRAM is found by PATH inside the jail.
var commandFlag = runFlag{name: "command", group: "program", field: "command",
	help: "run the arguments after -- as a command instead of Python, e.g. --command -- ls -la (the program is found by PATH in the jail; a missing one exits 127)",
	set:  boolFlag(func(ra *runArgs) *bool { return &ra.command })}

// setProgram sets the request's code, or with --command its command.
func (ra *runArgs) setProgram(stdin io.Reader) error {
	if !ra.command {
		program, err := ra.readProgram(stdin)
		if err != nil {
			return err
		}
		ra.req.Code = &program
		return nil
	}
	switch {
	case ra.code != nil:
		return usagef("--command: give either -c CODE or a command, not both")
	case ra.testsPath != "":
		return usagef("--tests: tests judge a function of Python code; a command has none")
	case len(ra.positional) == 0:
		return usagef("--command: no command: give it after --, e.g. agentjail run --command -- ls -la")
	}
	ra.req.Command = ra.positional
	return nil
}
