package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"agentjail/daemon"
	"agentjail/daemon/harness"
	"agentjail/nsjail"
	"agentjail/seccomp"
)

// limitFlags are the limit flags of `agentjail run`: the rows of the
// daemon's limits table that a request may set, each flag named like the
// JSON limit it sets (CONTRACT.md §1), with human units.
func limitFlags() []daemon.Limit {
	var out []daemon.Limit
	for _, l := range daemon.LimitTable() {
		if l.Flag != "" {
			out = append(out, l)
		}
	}
	return out
}

// parseLimit reads a limit flag's value in the unit of its key: a size in
// bytes, a duration in milliseconds, a count.
func parseLimit(l daemon.Limit, v string) (int64, error) {
	switch l.Unit {
	case daemon.UnitBytes:
		return parseSize(v)
	case daemon.UnitMs:
		d, err := parseDuration(v)
		return d.Milliseconds(), err
	case daemon.UnitCount:
		return parseCount(v)
	}
	return 0, fmt.Errorf("limit %s has no flag", l.Key)
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// runArgs is a parsed `agentjail run` command line.
type runArgs struct {
	json   bool
	socket string // "" runs the jail in this process
	python string // local mode only
	req    daemon.Request
	job    *daemon.Job // the request validated as local mode would run it
}

func parseRun(args []string, stdin io.Reader, stderr io.Writer) (*runArgs, error) {
	fs := flag.NewFlagSet("agentjail run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		ra        runArgs
		code      string
		stdinPath string
		testsPath string
		files     multiFlag
		collect   multiFlag
	)
	fs.BoolVar(&ra.json, "json", false, "print exactly one JSON result object on stdout")
	fs.StringVar(&ra.socket, "socket", os.Getenv("AGENTJAIL_SOCKET"), "send the request to the daemon on this socket (default $AGENTJAIL_SOCKET; empty: run the jail in this process, as root)")
	fs.StringVar(&code, "c", "", "run CODE instead of a file")
	fs.StringVar(&stdinPath, "stdin", "", "file whose bytes are the program's stdin (- for this process's stdin; default /dev/null)")
	fs.StringVar(&ra.python, "python", "", "host path of the interpreter, under /usr (local mode; default "+nsjail.DefaultPython+")")
	onForbidden := fs.String("on-forbidden-syscall", "", "errno: a forbidden system call fails with EPERM and is reported (default); kill: it ends the jail")
	fs.Var(&files, "file", "NAME=HOSTPATH: copy a host file to /workspace/NAME before the program starts (repeatable)")
	fs.Var(&collect, "collect", "GLOB: return the files of /workspace matching GLOB after the program ends (repeatable; see --json)")
	fs.StringVar(&testsPath, "tests", "", "FILE.json: test cases ({\"function\": ..., \"cases\": [...]}, CONTRACT.md §3), judged outside the jail")
	readLimits := addLimitFlags(fs, nil)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: agentjail run [--socket PATH] [--json] [limits] [--stdin FILE] [--file NAME=HOSTPATH]...\n"+
			"                     [--collect GLOB]... [--tests FILE.json] (FILE.py | -c CODE | -)\n\n")
		fs.PrintDefaults()
	}
	// Flags may come before and after the program argument.
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	r := &ra.req
	if *onForbidden != "" {
		if _, err := seccomp.ParseMode(*onForbidden); err != nil {
			return nil, usagef("--on-forbidden-syscall: %q: want errno or kill", *onForbidden)
		}
		r.OnForbiddenSyscall = *onForbidden
	}
	if ra.socket != "" && ra.python != "" {
		return nil, usagef("--python: the daemon runs the interpreter of its configuration (jail.python), not the caller's")
	}
	var err error
	if r.Limits, err = readLimits(); err != nil {
		return nil, err
	}
	var program string
	switch {
	case set["c"] && len(positional) > 0:
		return nil, usagef("give either -c CODE or a program file, not both (got %q)", positional[0])
	case set["c"]:
		program = code
	case len(positional) == 0:
		return nil, usagef("no program: give FILE.py, -c CODE, or - to read it from stdin")
	case len(positional) > 1:
		return nil, usagef("one program only (got %s)", strings.Join(positional, " "))
	case positional[0] == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("read program from stdin: %w", err)
		}
		program = string(b)
	default:
		b, err := os.ReadFile(positional[0])
		if err != nil {
			return nil, usagef("read program: %v", err)
		}
		program = string(b)
	}
	r.Code = &program
	var in []byte
	switch {
	case stdinPath == "-" && len(positional) == 1 && positional[0] == "-":
		return nil, usagef("--stdin -: stdin already holds the program")
	case stdinPath == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("read --stdin: %w", err)
		}
		in = b
	case stdinPath != "":
		b, err := os.ReadFile(stdinPath)
		if err != nil {
			return nil, usagef("--stdin: %v", err)
		}
		in = b
	}
	if in != nil {
		if !utf8.Valid(in) {
			return nil, usagef("--stdin: the program's stdin must be UTF-8 text (CONTRACT.md §3)")
		}
		str := string(in)
		r.Stdin = &str
	}
	if r.Files, err = hostFiles(files); err != nil {
		return nil, err
	}
	r.Collect = collect
	if testsPath != "" {
		b, err := os.ReadFile(testsPath)
		if err != nil {
			return nil, usagef("--tests: %v", err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r.Tests); err != nil {
			return nil, usagef("--tests %s: %v", testsPath, err)
		}
	}
	// Validated here in both modes, so that a bad flag is a usage error
	// before anything runs; the daemon checks its own maxima again.
	job, err := r.Job(localPolicy(ra.python))
	if err != nil {
		return nil, flagError(err)
	}
	ra.job = job
	return &ra, nil
}

// localPolicy is what local mode applies: CONTRACT.md's defaults and no
// maximum (the caller is root).
func localPolicy(python string) daemon.Policy {
	p := daemon.DefaultConfig().Policy()
	p.Max = nil
	if python != "" {
		p.Environments[daemon.DefaultEnvironment].Python = python
	}
	return p
}

// flagError names the flag behind a field that failed validation.
func flagError(err error) error {
	var fe *nsjail.FieldError
	if errors.As(err, &fe) {
		for _, l := range limitFlags() {
			if "limits."+l.Key == fe.Field {
				return usagef("--%s: %s", l.Flag, fe.Msg)
			}
		}
		for prefix, flag := range map[string]string{"files": "--file", "collect": "--collect", "tests": "--tests"} {
			if strings.HasPrefix(fe.Field, prefix) {
				return usagef("%s: %s", flag, err)
			}
		}
	}
	return &usageError{err.Error()}
}

// parseRunOr is parseRun for the command name (run, session run); a
// failure is answered, with the exit status code.
func parseRunOr(name string, args []string, stdin io.Reader, stdout, stderr io.Writer) (ra *runArgs, code int, ok bool) {
	ra, err := parseRun(args, stdin, stderr)
	var ue *usageError
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil, 0, false
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return nil, exitUsage, false
	case err != nil:
		return nil, setupFailed(ra, err, stdout, stderr), false
	}
	return ra, 0, true
}

func cmdRun(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ra, code, ok := parseRunOr("agentjail run", args, stdin, stdout, stderr)
	if !ok {
		return code
	}
	var err error
	var ue *usageError
	// Ctrl-C or a TERM ends the jail as "cancelled". In local mode the
	// result is still reported; through a daemon the request is dropped
	// (the daemon cancels the jail when the connection closes) and the
	// command exits 125 without a result.
	ctx, stop := signalContext()
	defer stop()
	var res *daemon.Result
	if ra.socket != "" {
		res, err = remoteRun(ctx, ra.socket, &ra.req)
	} else {
		res, err = localRun(ctx, ra)
	}
	if res == nil {
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "agentjail run: %v\n", err)
			return exitUsage
		}
		return setupFailed(ra, err, stdout, stderr)
	}
	if err != nil { // the result stands; something was left behind
		fmt.Fprintf(stderr, "agentjail: warning: %v\n", err)
	}
	if ra.json {
		_ = res.WriteJSON(stdout)
	} else {
		_, _ = io.WriteString(stdout, res.Stdout)
		_, _ = io.WriteString(stderr, res.Stderr)
		printVerdicts(stderr, res)
		fmt.Fprintln(stderr, summary(res))
	}
	return res.ExitCode
}

// signalContext is cancelled (cause nsjail.KillCancelled) by Ctrl-C,
// SIGTERM or SIGHUP, until stop.
func signalContext() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		if _, ok := <-sigs; ok {
			cancel(nsjail.KillCancelled)
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(sigs)
		cancel(nil)
	}
}

// addLimitFlags adds to fs the flags of the limits whose keys keep
// accepts (every limit with a flag when nil); read gives the request's
// limits they set (nil: none).
func addLimitFlags(fs *flag.FlagSet, keep func(key string) bool) (read func() (*daemon.RequestLimits, error)) {
	vals := map[string]*string{}
	for _, l := range limitFlags() {
		if keep == nil || keep(l.Key) {
			vals[l.Flag] = fs.String(l.Flag, "", l.Help)
		}
	}
	return func() (*daemon.RequestLimits, error) {
		var rl *daemon.RequestLimits
		for _, l := range limitFlags() {
			if v := vals[l.Flag]; v != nil && *v != "" {
				if rl == nil {
					rl = &daemon.RequestLimits{}
				}
				n, err := parseLimit(l, *v)
				if err == nil {
					err = l.Set(rl, n)
				}
				if err != nil {
					return nil, usagef("--%s: %v", l.Flag, err)
				}
			}
		}
		return rl, nil
	}
}

func localRun(ctx context.Context, ra *runArgs) (*daemon.Result, error) {
	if err := nsjail.CheckPython(ra.job.Spec.Python); err != nil {
		return nil, usagef("--python: %v", err)
	}
	// The libraries' configuration from the host's /etc (BLAS's
	// alternatives links, matplotlib's and fontconfig's files).
	etc, err := nsjail.HostEtc(ra.job.Spec.ReadOnlyMounts)
	if err != nil {
		return nil, err
	}
	ra.job.Spec.Etc = etc
	runner, err := nsjail.NewRunner()
	if err != nil {
		return nil, err
	}
	res, _, err := ra.job.Run(ctx, runner)
	return res, err
}

// printVerdicts shows test verdicts, collected files and feedback for
// people (without --json).
func printVerdicts(w io.Writer, r *daemon.Result) {
	if r.Tests != nil {
		for _, c := range r.Tests.Results {
			mark := "PASS"
			if !c.Passed {
				mark = "FAIL"
			}
			fmt.Fprintf(w, "agentjail: %s %s: %s\n", mark, c.Name, c.Detail)
		}
		fmt.Fprintf(w, "agentjail: tests %d/%d passed\n", r.Tests.Passed, r.Tests.Total)
	}
	for _, f := range r.Files {
		if f.Error != "" {
			fmt.Fprintf(w, "agentjail: not collected %s: %s\n", f.Path, f.Error)
		} else {
			fmt.Fprintf(w, "agentjail: collected %s (%s; --json returns the content)\n", f.Path, harness.Bytes(f.Size))
		}
	}
	if r.Status != string(nsjail.StatusOK) || r.Tests != nil && !r.Tests.AllPassed {
		for _, s := range r.Feedback {
			fmt.Fprintf(w, "agentjail: %s\n", s)
		}
	}
}

// summary is the one line `agentjail run` prints on stderr after the
// program's output.
func summary(r *daemon.Result) string {
	var b strings.Builder
	b.WriteString("agentjail: ")
	switch r.Status {
	case string(nsjail.StatusKilled):
		fmt.Fprintf(&b, "killed (%s)", r.KillReason)
	case string(nsjail.StatusSignaled):
		fmt.Fprintf(&b, "signal %s", r.Signal)
	default:
		fmt.Fprintf(&b, "exit %d", r.ExitCode)
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	fmt.Fprintf(&b, " · wall %s · cpu %s", harness.Duration(ms(r.WallTimeMs)), harness.Duration(ms(r.CPUTimeMs)))
	if r.PeakMemoryBytes != nil {
		fmt.Fprintf(&b, " · peak %s", harness.Bytes(*r.PeakMemoryBytes))
		if r.KillReason == string(nsjail.KillMemoryLimit) {
			fmt.Fprintf(&b, " of %s", harness.Bytes(r.MemoryLimitBytes))
		}
	}
	if r.StdoutTruncated || r.StderrTruncated {
		b.WriteString(" · output truncated")
	}
	return b.String()
}

// setupFailed reports an error that left no result: exit 125.
func setupFailed(ra *runArgs, err error, stdout, stderr io.Writer) int {
	code := "setup_failed"
	var re *remoteError
	if errors.As(err, &re) {
		code = re.Code
	}
	if ra != nil && ra.json {
		enc := json.NewEncoder(stdout)
		_ = enc.Encode(map[string]any{"error": map[string]string{"code": code, "message": err.Error()}})
	}
	fmt.Fprintf(stderr, "agentjail: %v\n", err)
	return exitSetup
}
