// Command agentjail runs untrusted Python in a kernel-level jail: see
// docs/contract.md for its command line and README.md for how to use it.
package main

import (
	"fmt"
	"io"
	"os"

	"agentjail/nsjail"
	// The jail's C stages, run before the Go runtime starts (a
	// constructor), and the runtime threads' timer slack: only a binary
	// that runs jails imports them, for these side effects. This
	// package's tests get them through this file too.
	_ "agentjail/nsjail/boot"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// Exit statuses of docs/contract.md §1.
const (
	exitUsage = 2
	exitSetup = 125
)

func main() {
	// A jail's init stage is this binary re-executed, but it never gets
	// here: it is C (nsjail/boot/init_linux.c), which the bootstrap's
	// constructor (nsjail/boot/bootstrap_linux.c) enters before the Go runtime
	// starts, and it never returns. Only a binary built without cgo, which
	// cannot run jails, reaches this check as an init stage: it exits.
	if nsjail.IsInit() {
		nsjail.Init()
	}
	os.Exit(dispatch(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `usage:
  agentjail serve  [--config FILE] [--socket PATH]
  agentjail run    [--socket PATH] [--json] [limits] [--on-forbidden-syscall errno|kill] [--stdin FILE]
                   [--file NAME=HOSTPATH]... [--collect GLOB]... [--collect-dir DIR [--overwrite]]
                   [--tests FILE.json [--fail-on-test-failure]] (FILE.py | -c CODE | -)
  agentjail check  [--json] [--python PATH]
  agentjail session start|run|show|end|list ... (run "agentjail session help")
  agentjail mcp    [--socket PATH] [--config FILE]    # a Model Context Protocol server on stdio
  agentjail drain  [--socket PATH] [--wait DURATION]  # take no new work (a preStop hook)
  agentjail version

Run "agentjail run --help" for its flags, the limits' defaults and the exit statuses.
`

func dispatch(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "serve":
		return cmdServe(args[1:], stderr)
	case "run":
		return cmdRun(args[1:], stdin, stdout, stderr)
	case "check":
		return cmdCheck(args[1:], stdout, stderr)
	case "session":
		return cmdSession(args[1:], stdin, stdout, stderr)
	case "mcp":
		return cmdMCP(args[1:], stdin, stdout, stderr)
	case "drain":
		return cmdDrain(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "agentjail %s\n", version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "agentjail: unknown command %q\n%s", args[0], usage)
	return exitUsage
}
