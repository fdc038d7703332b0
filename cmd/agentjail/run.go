package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"agentjail/daemon"
	"agentjail/nsjail"
	"agentjail/seccomp"
)

// limitFlag is one limit flag of `agentjail run`, named like the JSON limit
// it sets (CONTRACT.md §1).
type limitFlag struct {
	name, field, help string
	set               func(l *nsjail.Limits, v string) error
}

var limitFlags = []limitFlag{
	{"memory", "limits.memory_bytes", "memory limit, swap off (e.g. 256MiB)", func(l *nsjail.Limits, v string) (err error) {
		l.MemoryBytes, err = parseSize(v)
		return
	}},
	{"timeout", "limits.wall_time_ms", "wall-clock limit (e.g. 10s)", func(l *nsjail.Limits, v string) (err error) {
		l.WallTime, err = parseDuration(v)
		return
	}},
	{"cpu-time", "limits.cpu_time_ms", "CPU time of all processes (e.g. 5s)", func(l *nsjail.Limits, v string) (err error) {
		l.CPUTime, err = parseDuration(v)
		return
	}},
	{"pids", "limits.pids", "processes and threads (e.g. 64)", func(l *nsjail.Limits, v string) (err error) {
		l.Pids, err = parseCount(v)
		return
	}},
	{"output-limit", "limits.output_bytes", "stdout+stderr captured before the jail is killed (e.g. 1MiB)", func(l *nsjail.Limits, v string) (err error) {
		l.OutputBytes, err = parseSize(v)
		return
	}},
	{"tmp-size", "limits.tmp_bytes", "size of /workspace, /tmp and /dev/shm together (e.g. 64MiB)", func(l *nsjail.Limits, v string) (err error) {
		l.TmpBytes, err = parseSize(v)
		return
	}},
	{"open-files", "limits.open_files", "open file descriptors per process (e.g. 256)", func(l *nsjail.Limits, v string) (err error) {
		l.OpenFiles, err = parseCount(v)
		return
	}},
	{"file-size", "limits.file_size_bytes", "largest file a process may write (e.g. 32MiB)", func(l *nsjail.Limits, v string) (err error) {
		l.FileSizeBytes, err = parseSize(v)
		return
	}},
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// runArgs is a parsed `agentjail run` command line.
type runArgs struct {
	json bool
	spec nsjail.Spec
}

func parseRun(args []string, stdin io.Reader, stderr io.Writer) (*runArgs, error) {
	fs := flag.NewFlagSet("agentjail run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		ra        runArgs
		code      string
		stdinPath string
		python    string
		files     multiFlag
		limitVals = map[string]*string{}
	)
	fs.BoolVar(&ra.json, "json", false, "print exactly one JSON result object on stdout")
	fs.StringVar(&code, "c", "", "run CODE instead of a file")
	fs.StringVar(&stdinPath, "stdin", "", "file whose bytes are the program's stdin (- for this process's stdin; default /dev/null)")
	fs.StringVar(&python, "python", nsjail.DefaultPython, "host path of the interpreter (it must live under /usr)")
	onForbidden := fs.String("on-forbidden-syscall", "errno", "errno: a forbidden system call fails with EPERM and is reported; kill: it ends the jail")
	fs.Var(&files, "file", "NAME=HOSTPATH: copy a host file to /workspace/NAME before the program starts (repeatable)")
	for _, lf := range limitFlags {
		limitVals[lf.name] = fs.String(lf.name, "", lf.help)
	}
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: agentjail run [--json] [limits] [--stdin FILE] [--file NAME=HOSTPATH]... (FILE.py | -c CODE | -)\n\n")
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
	codeSet := false
	fs.Visit(func(f *flag.Flag) { codeSet = codeSet || f.Name == "c" })

	s := &ra.spec
	s.Python = python
	mode, err := seccomp.ParseMode(*onForbidden)
	if err != nil {
		return nil, usagef("--on-forbidden-syscall: %q: want errno or kill", *onForbidden)
	}
	s.OnForbiddenSyscall = mode
	s.Limits = nsjail.DefaultLimits()
	for _, lf := range limitFlags {
		if v := *limitVals[lf.name]; v != "" {
			if err := lf.set(&s.Limits, v); err != nil {
				return nil, usagef("--%s: %v", lf.name, err)
			}
		}
	}
	switch {
	case codeSet && len(positional) > 0:
		return nil, usagef("give either -c CODE or a program file, not both (got %q)", positional[0])
	case codeSet:
		s.Program = []byte(code)
	case len(positional) == 0:
		return nil, usagef("no program: give FILE.py, -c CODE, or - to read it from stdin")
	case len(positional) > 1:
		return nil, usagef("one program only (got %s)", strings.Join(positional, " "))
	case positional[0] == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("read program from stdin: %w", err)
		}
		s.Program = b
	default:
		b, err := os.ReadFile(positional[0])
		if err != nil {
			return nil, usagef("read program: %v", err)
		}
		s.Program = b
		s.ProgramName = filepath.Base(positional[0])
	}
	switch {
	case stdinPath == "-" && len(positional) == 1 && positional[0] == "-":
		return nil, usagef("--stdin -: stdin already holds the program")
	case stdinPath == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("read --stdin: %w", err)
		}
		s.Stdin = b
	case stdinPath != "":
		b, err := os.ReadFile(stdinPath)
		if err != nil {
			return nil, usagef("--stdin: %v", err)
		}
		s.Stdin = b
	}
	for _, f := range files {
		name, host, ok := strings.Cut(f, "=")
		if !ok || name == "" || host == "" {
			return nil, usagef("--file %q: want NAME=HOSTPATH", f)
		}
		clean, err := nsjail.CleanRelPath(name)
		if err != nil {
			return nil, usagef("--file %q: %v", f, err)
		}
		b, err := os.ReadFile(host)
		if err != nil {
			return nil, usagef("--file %s: %v", name, err)
		}
		s.Files = append(s.Files, nsjail.File{Path: clean, Content: b})
	}
	if err := s.Validate(); err != nil {
		return nil, flagError(err)
	}
	return &ra, nil
}

// flagError names the flag behind a field that failed validation.
func flagError(err error) error {
	var fe *nsjail.FieldError
	if errors.As(err, &fe) {
		for _, lf := range limitFlags {
			if lf.field == fe.Field {
				return usagef("--%s: %s", lf.name, fe.Msg)
			}
		}
		if strings.HasPrefix(fe.Field, "files[") {
			return usagef("--file: %s", fe.Msg)
		}
	}
	return &usageError{err.Error()}
}

func cmdRun(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ra, err := parseRun(args, stdin, stderr)
	var ue *usageError
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "agentjail run: %v\n", err)
		return exitUsage
	case err != nil:
		return setupFailed(ra, err, stdout, stderr)
	}
	if err := nsjail.CheckPython(ra.spec.Python); err != nil {
		fmt.Fprintf(stderr, "agentjail run: --python: %v\n", err)
		return exitUsage
	}
	runner, err := nsjail.NewRunner()
	if err != nil {
		return setupFailed(ra, err, stdout, stderr)
	}
	// Ctrl-C or a TERM ends the jail as "cancelled" and still reports.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		if _, ok := <-sigs; ok {
			cancel(nsjail.KillCancelled)
		}
	}()
	res, err := runner.Run(ctx, &ra.spec)
	signal.Stop(sigs)
	close(sigs)
	if res == nil {
		return setupFailed(ra, err, stdout, stderr)
	}
	if err != nil { // the result stands; something was left behind
		fmt.Fprintf(stderr, "agentjail: warning: %v\n", err)
	}
	out := daemon.FromJail(res)
	if ra.json {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(out)
	} else {
		_, _ = stdout.Write(res.Stdout)
		_, _ = stderr.Write(res.Stderr)
		fmt.Fprintln(stderr, summary(res))
	}
	return res.ExitCode
}

// summary is the one line `agentjail run` prints on stderr after the
// program's output.
func summary(r *nsjail.Result) string {
	var b strings.Builder
	b.WriteString("agentjail: ")
	switch r.Status {
	case nsjail.StatusKilled:
		fmt.Fprintf(&b, "killed (%s)", string(r.KillReason))
	case nsjail.StatusSignaled:
		fmt.Fprintf(&b, "signal %s", unix.SignalName(r.Signal))
	default:
		fmt.Fprintf(&b, "exit %d", r.ExitCode)
	}
	fmt.Fprintf(&b, " · wall %s · cpu %s", daemon.Duration(r.WallTime), daemon.Duration(r.CPUTime))
	if r.PeakMemoryBytes >= 0 {
		fmt.Fprintf(&b, " · peak %s", daemon.Bytes(r.PeakMemoryBytes))
		if r.KillReason == nsjail.KillMemoryLimit {
			fmt.Fprintf(&b, " of %s", daemon.Bytes(r.MemoryLimitBytes))
		}
	}
	if r.StdoutTruncated || r.StderrTruncated {
		b.WriteString(" · output truncated")
	}
	return b.String()
}

// setupFailed reports an error that left no result: exit 125.
func setupFailed(ra *runArgs, err error, stdout, stderr io.Writer) int {
	if ra != nil && ra.json {
		enc := json.NewEncoder(stdout)
		_ = enc.Encode(map[string]any{"error": map[string]string{"code": "setup_failed", "message": err.Error()}})
	}
	fmt.Fprintf(stderr, "agentjail: %v\n", err)
	return exitSetup
}
