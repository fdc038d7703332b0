package main

import (
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"unicode"

	"agentjail/daemon"
	"agentjail/nsjail"
	"agentjail/seccomp"
)

// The flags of `agentjail run` are one table: it drives the parsing, the
// --help text, and the naming of a request field that the daemon refused
// by the flag that set it (flagError). A new flag is a row: a request
// field (say "environment") is a row whose set writes ra.req and whose
// field names it; a repeatable one appends, as --collect does.

// A runFlag is one flag of `agentjail run`.
type runFlag struct {
	name  string // --name (also -name); a one-letter name is shown -n
	arg   string // what its value is, for --help ("SIZE"); "" for a switch, which takes none
	group string // the --help section: one of flagGroups
	help  string
	def   string // the default, for --help; "" for none shown
	// field is the request field the flag sets ("collect",
	// "limits.memory_bytes"): a daemon's refusal of that field, or of a
	// field below it, names the flag. "" for none.
	field string
	// set applies the value: the argument, or for a switch "true" or
	// "false". Its error is a usage error, prefixed with the flag.
	set func(ra *runArgs, v string) error
}

// flagGroups are the sections of --help, in order.
var flagGroups = []string{"program", "limits", "output", "where"}

// runFlags is the table, in the order of --help.
func runFlags() []runFlag {
	flags := []runFlag{
		{name: "c", arg: "CODE", group: "program",
			help: "run CODE instead of a file",
			set:  func(ra *runArgs, v string) error { ra.code = &v; return nil }},
		commandFlag,
		{name: "stdin", arg: "FILE", group: "program", field: "stdin",
			help: "the program's stdin is the bytes of FILE (- for this process's stdin); UTF-8 text. Default: /dev/null",
			set:  func(ra *runArgs, v string) error { ra.stdinPath = v; return nil }},
		{name: "file", arg: "NAME=HOSTPATH", group: "program", field: "files",
			help: "copy a host file to /workspace/NAME before the program starts (repeatable)",
			set:  func(ra *runArgs, v string) error { ra.files = append(ra.files, v); return nil }},
		{name: "collect", arg: "GLOB", group: "program", field: "collect",
			help: "return the files of /workspace that match GLOB after the program ends (repeatable; see --collect-dir)",
			set:  func(ra *runArgs, v string) error { ra.req.Collect = append(ra.req.Collect, v); return nil }},
		{name: "tests", arg: "FILE.json", group: "program", field: "tests",
			help: `test cases, judged outside the jail: {"function": NAME, "cases": [...]} (docs/contract.md §3.9)`,
			set:  func(ra *runArgs, v string) error { ra.testsPath = v; return nil }},
		{name: "env", arg: "KEY=VALUE", group: "program", field: "env",
			help: "set a variable in the program's environment (repeatable); it overrides the environment's own",
			set: func(ra *runArgs, v string) error {
				k, val, ok := strings.Cut(v, "=")
				if !ok || k == "" {
					return fmt.Errorf("%q: want KEY=VALUE", v)
				}
				if ra.req.Env == nil {
					ra.req.Env = map[string]string{}
				}
				ra.req.Env[k] = val
				return nil
			}},
		{name: "on-forbidden-syscall", arg: "errno|kill", group: "program", field: "on_forbidden_syscall",
			help: "errno: a forbidden system call fails with EPERM and is reported (default); kill: it ends the jail",
			set: func(ra *runArgs, v string) error {
				if _, err := seccomp.ParseMode(v); err != nil {
					return fmt.Errorf("%q: want errno or kill", v)
				}
				ra.req.OnForbiddenSyscall = v
				return nil
			}},
	}
	for _, l := range limitFlags() {
		flags = append(flags, runFlag{name: l.Flag, arg: unitArg[l.Unit], group: "limits", field: "limits." + l.Key,
			help: l.Key + ": " + strings.TrimSuffix(l.Help, exampleOf(l.Help)), def: formatLimit(l, defaultLimit(l)),
			set: func(ra *runArgs, v string) error {
				n, err := parseLimit(l, v)
				if err != nil {
					return err
				}
				if ra.req.Limits == nil {
					ra.req.Limits = &daemon.RequestLimits{}
				}
				return l.Set(ra.req.Limits, n)
			}})
	}
	return append(flags,
		runFlag{name: "json", group: "output",
			help: "print exactly one JSON object on stdout: the result, or the error when there is none",
			set:  boolFlag(func(ra *runArgs) *bool { return &ra.json })},
		runFlag{name: "collect-dir", arg: "DIR", group: "output",
			help: "write the collected files below DIR (made if missing), at their paths in /workspace, and the figures the program showed (display-1.png, …); nothing leaves DIR, no symbolic link is followed, and a DIR that holds anything is refused before the run (exit 2) unless --overwrite",
			set:  func(ra *runArgs, v string) error { ra.collectDir = v; return nil }},
		runFlag{name: "overwrite", group: "output",
			help: "with --collect-dir: write into a DIR that holds files, replacing those the run collects (a directory is never replaced; other files are left)",
			set:  boolFlag(func(ra *runArgs) *bool { return &ra.overwrite })},
		runFlag{name: "fail-on-test-failure", group: "output",
			help: "exit 1 when a test failed and the program itself exited 0 (for CI); without it the exit status is the program's",
			set:  boolFlag(func(ra *runArgs) *bool { return &ra.failOnTests })},
		runFlag{name: "socket", arg: "PATH", group: "where",
			help: "send the run to the daemon on this socket (default $AGENTJAIL_SOCKET; empty: run the jail in this process, as root)",
			set:  func(ra *runArgs, v string) error { ra.socket = v; return nil }},
		runFlag{name: "url", arg: "URL", group: "where",
			help: "send the run to the daemon's remote listener, e.g. https://node-1:8443 (default $AGENTJAIL_URL); with --token-file and, for a private CA, --ca",
			set:  func(ra *runArgs, v string) error { ra.remote.url = v; return nil }},
		runFlag{name: "token-file", arg: "FILE", group: "where",
			help: "with --url: a file that holds the bearer token (default: $AGENTJAIL_TOKEN holds the token itself)",
			set:  func(ra *runArgs, v string) error { ra.remote.tokenFile = v; return nil }},
		runFlag{name: "ca", arg: "FILE", group: "where",
			help: "with --url: PEM certificates to trust for the daemon's (default: the system's)",
			set:  func(ra *runArgs, v string) error { ra.remote.ca = v; return nil }},
		runFlag{name: "tls-server-name", arg: "NAME", group: "where",
			help: "with --url: check the daemon's certificate against NAME instead of the URL's host, e.g. agentjail.agentjail.svc for a pod's IP (default $AGENTJAIL_TLS_SERVER_NAME)",
			set:  func(ra *runArgs, v string) error { ra.remote.serverName = v; return nil }},
		runFlag{name: "environment", arg: "NAME", group: "where", field: "environment", def: daemon.DefaultEnvironment,
			help: "the environment (Python runtime) to run in: one of the daemon's (GET /v1/environments), or without a daemon one of --config's",
			set:  func(ra *runArgs, v string) error { ra.req.Environment = v; return nil }},
		runFlag{name: "start", arg: "warm|cold", group: "where", field: "start",
			help: "through a daemon: warm (a fork of the environment's ready interpreter) or cold (a fresh python3); default the daemon's. Without a daemon runs are cold",
			set: func(ra *runArgs, v string) error {
				if v != string(nsjail.StartWarm) && v != string(nsjail.StartCold) {
					return fmt.Errorf("%q: want warm or cold", v)
				}
				ra.req.Start = v
				return nil
			}},
		runFlag{name: "config", arg: "FILE", group: "where", def: daemon.DefaultConfigPath + " when it exists",
			help: "without a daemon: the configuration whose environments and [limits.default] to use",
			set:  func(ra *runArgs, v string) error { ra.config = v; return nil }},
		runFlag{name: "python", arg: "PATH", group: "where",
			help: "the interpreter, under /usr (this process only; default the environment's, " + nsjail.DefaultPython + "); a daemon runs the one of its configuration",
			set:  func(ra *runArgs, v string) error { ra.python = v; return nil }},
	)
}

func boolFlag(field func(*runArgs) *bool) func(*runArgs, string) error {
	return func(ra *runArgs, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%q: want true or false", v)
		}
		*field(ra) = b
		return nil
	}
}

// unitArg is what a limit flag's value is, by unit.
var unitArg = map[daemon.LimitUnit]string{daemon.UnitBytes: "SIZE", daemon.UnitMs: "DURATION", daemon.UnitCount: "COUNT"}

// exampleOf is the " (e.g. …)" at the end of a limit's help, which --help
// replaces with its default.
func exampleOf(help string) string {
	if i := strings.LastIndex(help, " (e.g. "); i >= 0 && strings.HasSuffix(help, ")") {
		return help[i:]
	}
	return ""
}

// flagName is how a flag is written: -c, --memory.
func (f *runFlag) flagName() string {
	if len(f.name) == 1 {
		return "-" + f.name
	}
	return "--" + f.name
}

// parseFlags reads the command line into ra: flags and, before, between
// or after them, the program's argument (positional). A flag is -name or
// --name; its value is the next argument or follows "=". A value taken
// from the next argument may not look like a flag (-x, --x): `--collect
// -c pass` is a forgotten value far more often than a glob "-c", which
// --collect=-c still gives. "--" ends the flags. help reports -h or
// --help. table is runFlags(), or another command's flags of the same kind.
func parseFlags(table []runFlag, args []string, ra *runArgs) (help bool, err error) {
	flags := map[string]*runFlag{}
	for _, f := range table {
		flags[f.name] = &f
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			ra.positional = append(ra.positional, args[i+1:]...)
			return false, nil
		case len(a) < 2 || a[0] != '-': // "-" is the program from stdin
			ra.positional = append(ra.positional, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		if name == "h" || name == "help" {
			return true, nil
		}
		f := flags[name]
		if f == nil {
			return false, usagef("unknown flag %s (agentjail run --help lists them)", a)
		}
		switch {
		case f.arg == "" && !hasVal:
			val = "true"
		case f.arg == "":
		case hasVal:
		case i+1 == len(args):
			return false, usagef("%s needs a value: %s", f.flagName(), f.arg)
		default:
			i++
			val = args[i]
			if looksLikeFlag(val) {
				return false, usagef("%s: its value %q looks like a flag, so %s was probably given no value; if %q is the value, write %s=%s",
					f.flagName(), val, f.flagName(), val, f.flagName(), val)
			}
		}
		if err := f.set(ra, val); err != nil {
			return false, usagef("%s: %v", f.flagName(), err)
		}
	}
	return false, nil
}

// looksLikeFlag: "-x…" or "--…", but not "-" (stdin) nor a negative
// number ("-5MiB", which the flag's own check refuses with its reason).
func looksLikeFlag(v string) bool {
	return len(v) >= 2 && v[0] == '-' && (v[1] == '-' || unicode.IsLetter(rune(v[1])))
}

// runHelp is `agentjail run --help`.
func runHelp(w io.Writer) {
	fmt.Fprint(w, `usage: agentjail run [flags] (FILE.py | -c CODE | -)

Runs a Python program in a fresh jail, then reports what happened: the
program's output on stdout and stderr as it wrote them, then agentjail's
lines on stderr (test verdicts, collected files, feedback, a summary), or
with --json one JSON object on stdout (docs/contract.md §3).

Flags may come before or after the program. A flag's value is the next
argument or follows "=": a value that starts with "-" must be written
--flag=VALUE (--collect=-x.txt), else it is taken for a flag.
`)
	titles := map[string]string{
		"program": "The program and its files:",
		"limits":  "Limits:",
		"output":  "Output and exit status:",
		"where":   "Where it runs:",
	}
	flags := runFlags()
	for _, g := range flagGroups {
		fmt.Fprintf(w, "\n%s\n", titles[g])
		for _, f := range flags {
			if f.group != g {
				continue
			}
			head := f.flagName()
			if f.arg != "" {
				head += " " + f.arg
			}
			if f.def != "" {
				head += " (default " + f.def + ")"
			}
			fmt.Fprintf(w, "  %s\n", head)
			for _, line := range wrap(f.help, 72) {
				fmt.Fprintf(w, "        %s\n", line)
			}
		}
		if g == "limits" {
			fmt.Fprint(w, `  SIZE: 256MiB, 1.5GiB, 512KiB (B, KiB, MiB, GiB, TiB; KB, MB, GB, TB are
  powers of 1000); DURATION: 10s, 500ms, 1m30s, or a number of seconds;
  COUNT: a whole number.
  Defaults: a limit left out takes its default. In this process (no
  --socket), the defaults shown, with no maximum. Through a daemon (--socket
  or AGENTJAIL_SOCKET), the daemon's configured defaults ([limits.default]
  of its configuration; the values shown are the shipped ones), and no
  limit may pass the daemon's maximum ([limits.max]).
`)
			if s := os.Getenv("AGENTJAIL_SOCKET"); s != "" {
				fmt.Fprintf(w, "  AGENTJAIL_SOCKET is set: without --socket, runs go to the daemon on %s.\n", s)
			}
		}
	}
	fmt.Fprint(w, `
Exit status:
  the program's exit code  it exited by itself
  128+N                    it died of signal N; 137 (SIGKILL) when a limit or
                           agentjail ended it
  1                        with --fail-on-test-failure: a test failed, and
                           the program exited 0
  2                        usage error, or a field the daemon refused
  125                      no result: the jail could not be set up, or the
                           daemon is absent, refused the run or failed; or,
                           when the program exited 0, a collected file could
                           not be written (--collect-dir)
`)
}

// wrap cuts s into lines of at most width bytes, at spaces.
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}

// defaultLimit is a limit's built-in default (docs/contract.md §3.2), in its
// key's unit: local mode's, and a daemon's unless its configuration says
// otherwise.
func defaultLimit(l daemon.Limit) int64 {
	v := reflect.ValueOf(daemon.DefaultConfig().Limits.Default)
	for i := range v.NumField() {
		if name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("toml"), ","); name == l.Key && v.Field(i).CanInt() {
			return v.Field(i).Int()
		}
	}
	return 0
}

// formatLimit writes a limit's value as its flag takes it: 256MiB, 10s, 64.
func formatLimit(l daemon.Limit, n int64) string { return l.Human(n) }
