package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"agentjail/daemon"
	"agentjail/daemon/harness"
	"agentjail/nsjail"
)

// limitFlags are the limit flags of `agentjail run`: the rows of the
// daemon's limits table that a request may set, each flag named like the
// JSON limit it sets (docs/contract.md §1), with human units.
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

type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// runArgs is a parsed `agentjail run` command line.
type runArgs struct {
	json        bool
	socket      string // "" runs the jail in this process
	python      string // local mode only
	config      string // local mode only: the configuration file ("" for the default one, when it exists)
	collectDir  string // where the collected files are written; "" for nowhere
	overwrite   bool   // --collect-dir may replace existing files
	failOnTests bool   // a failed test makes the exit status 1
	req         daemon.Request
	job         *daemon.Job // the request validated as local mode would run it

	remote remoteURL // --url, --token-file, --ca: a daemon's TCP listener (remote_url.go)

	// What the flags gave, read once every flag is known.
	code       *string // -c
	command    bool    // --command: the positional arguments are an argv
	stdinPath  string
	testsPath  string
	files      []string // NAME=HOSTPATH
	positional []string
}

// parseRun reads the command line (runflags.go) and makes the request.
// help reports --help, which it printed on stdout.
func parseRun(args []string, stdin io.Reader, stdout io.Writer) (ra *runArgs, help bool, err error) {
	ra = &runArgs{socket: os.Getenv("AGENTJAIL_SOCKET"), remote: remoteURL{url: os.Getenv("AGENTJAIL_URL")}}
	if help, err := parseFlags(runFlags(), args, ra); help || err != nil {
		if help {
			runHelp(stdout)
		}
		return nil, help, err
	}
	if err := ra.build(stdin); err != nil {
		return nil, false, err
	}
	return ra, false, nil
}

// build makes the request from what the flags gave, and validates it.
func (ra *runArgs) build(stdin io.Reader) error {
	r := &ra.req
	if ra.remote.url != "" {
		if err := ra.remote.check(); err != nil {
			return err
		}
		ra.socket = ra.remote.url // through a daemon, as with --socket (the URL wins over AGENTJAIL_SOCKET)
	}
	if ra.socket != "" && ra.python != "" {
		return usagef("--python: the daemon runs the interpreter of its configuration (jail.python), not the caller's")
	}
	if ra.socket != "" && ra.config != "" {
		return usagef("--config: the daemon runs with its own configuration; --config is for runs without a daemon")
	}
	if ra.socket == "" && r.Start == string(nsjail.StartWarm) {
		return usagef("--start warm: runs without a daemon are cold (a warm run is a fork of a daemon's zygote); give --socket, or leave --start out")
	}
	if ra.overwrite && ra.collectDir == "" {
		return usagef("--overwrite: it replaces files that --collect-dir DIR writes; give --collect-dir")
	}
	if err := checkCollectDir(ra.collectDir, ra.overwrite); err != nil {
		return err
	}
	if err := ra.setProgram(stdin); err != nil {
		return err
	}
	var in []byte
	switch {
	case ra.stdinPath == "-" && len(ra.positional) == 1 && ra.positional[0] == "-":
		return usagef("--stdin -: stdin already holds the program")
	case ra.stdinPath == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return fmt.Errorf("read --stdin: %w", err)
		}
		in = b
	case ra.stdinPath != "":
		b, err := os.ReadFile(ra.stdinPath)
		if err != nil {
			return usagef("--stdin: %v", err)
		}
		in = b
	}
	if in != nil {
		if !utf8.Valid(in) {
			return usagef("--stdin: the program's stdin must be UTF-8 text (docs/contract.md §3)")
		}
		str := string(in)
		r.Stdin = &str
	}
	for _, f := range ra.files {
		name, host, ok := strings.Cut(f, "=")
		if !ok || name == "" || host == "" {
			return usagef("--file %q: want NAME=HOSTPATH", f)
		}
		clean, err := nsjail.CleanRelPath(name)
		if err != nil {
			return usagef("--file %q: %v", f, err)
		}
		b, err := os.ReadFile(host)
		if err != nil {
			return usagef("--file %s: %v", name, err)
		}
		r.Files = append(r.Files, daemon.RequestFile{Path: clean, Content: base64.StdEncoding.EncodeToString(b), Encoding: "base64"})
	}
	if ra.testsPath != "" {
		b, err := os.ReadFile(ra.testsPath)
		if err != nil {
			return usagef("--tests: %v", err)
		}
		// The daemon's own decoding and messages: the field's path, the
		// name meant, where a syntax error is.
		if r.Tests, err = daemon.DecodeTests(b); err != nil {
			return usagef("--tests %s: %v", ra.testsPath, err)
		}
	}
	// Validated here in both modes, so that a bad flag is a usage error
	// before anything runs; the daemon checks its own maxima again.
	policy, err := ra.policy()
	if err != nil {
		return err
	}
	job, err := r.Job(policy)
	if err != nil {
		return flagError(err)
	}
	ra.job = job
	return nil
}

// policy is what the request is validated against here. Without a
// daemon: the configuration's environments and defaults (--config, or
// the default file when there is one, else the built-in ones), with no
// maximum (the caller is root), the environment checked as the daemon
// checks it at start-up. Through a daemon, whose environments are its
// own: the built-in defaults, any environment name (the daemon says
// which it has).
func (ra *runArgs) policy() (daemon.Policy, error) {
	if ra.socket != "" {
		p := daemon.DefaultConfig().Policy()
		p.Max = nil
		if name := ra.req.Environment; name != "" {
			p.Environments[name] = &daemon.Environment{Name: name}
		}
		return p, nil
	}
	cfg, path, err := localConfig(ra.config)
	if err != nil {
		return daemon.Policy{}, err
	}
	p := cfg.Policy()
	p.Max = nil
	p.Start = nsjail.StartCold
	name := ra.req.Environment
	if name == "" {
		name = daemon.DefaultEnvironment
	}
	e, ok := p.Environments[name]
	if !ok {
		return p, usagef("--environment: unknown environment %q; %s has: %s", name, cmp.Or(path, "the built-in configuration"), strings.Join(cfg.EnvironmentNames(), ", "))
	}
	if ra.python != "" {
		e.Python = ra.python
		return p, nil
	}
	if err := cfg.CheckEnvironment(name, path, ""); err != nil {
		return p, fmt.Errorf("%s: %w", cmp.Or(path, "configuration"), err)
	}
	return p, nil
}

// localConfig is the configuration of a run without a daemon: the file
// given, else the default file when it exists, else the defaults; and
// its path ("" for the defaults).
func localConfig(path string) (*daemon.Config, string, error) {
	if path == "" {
		if _, err := os.Stat(daemon.DefaultConfigPath); err != nil {
			return daemon.DefaultConfig(), "", nil
		}
		path = daemon.DefaultConfigPath
	}
	cfg, err := daemon.LoadConfig(path)
	if err != nil {
		return nil, "", usagef("--config: %v", err)
	}
	return cfg, path, nil
}

// flagError names the flag behind a field that failed validation: the
// flag whose field is the longest prefix of the error's.
func flagError(err error) error {
	var fe *nsjail.FieldError
	if errors.As(err, &fe) {
		var best *runFlag
		for _, f := range runFlags() {
			if f.field != "" && (fe.Field == f.field || strings.HasPrefix(fe.Field, f.field+".") || strings.HasPrefix(fe.Field, f.field+"[")) &&
				(best == nil || len(f.field) > len(best.field)) {
				best = &f
			}
		}
		switch {
		case best != nil && strings.HasPrefix(best.field, "limits."): // the message, then the request's field it is about
			return usagef("%s: %s (%s)", best.flagName(), fe.Msg, fe.Field)
		case best != nil:
			return usagef("%s: %s", best.flagName(), err)
		}
	}
	return &usageError{err.Error()}
}

func cmdRun(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ra, help, err := parseRun(args, stdin, stdout)
	var ue *usageError
	switch {
	case help:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "agentjail run: %v\n", err)
		return exitUsage
	case err != nil:
		return setupFailed(ra, err, stdout, stderr)
	}
	// Ctrl-C or a TERM ends the jail as "cancelled". In local mode the
	// result is still reported; through a daemon the request is dropped
	// (the daemon cancels the jail when the connection closes) and the
	// command exits 125 without a result.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		if _, ok := <-sigs; ok {
			cancel(nsjail.KillCancelled)
		}
	}()
	defer func() {
		signal.Stop(sigs)
		close(sigs)
	}()
	var (
		res *daemon.Result
		raw []byte // the daemon's answer, as it came
	)
	var live *liveOutput // through a daemon's socket, the output is printed as it comes
	if ra.remote.url == "" && ra.socket != "" && !ra.json {
		live = &liveOutput{stdout, stderr}
	}
	switch {
	case ra.remote.url != "":
		res, raw, err = ra.remote.run(ctx, &ra.req)
	case ra.socket != "":
		res, raw, err = remoteRun(ctx, ra.socket, &ra.req, live)
	default:
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
	var writes []collectWrite
	if ra.collectDir != "" {
		writes = writeOutputs(ra.collectDir, res, ra.overwrite)
		if len(writes) == 0 && len(ra.req.Collect) == 0 {
			// Without --collect, DIR receives the figures the program
			// showed; say so when there were none, rather than nothing.
			fmt.Fprintln(stderr, "agentjail: --collect-dir: nothing written: the program showed no figure, and no --collect GLOB names files to collect")
		}
	}
	if ra.json {
		if raw != nil { // the object as the daemon sent it, fields this build does not know included
			_, _ = stdout.Write(raw)
			if !bytes.HasSuffix(raw, []byte("\n")) {
				_, _ = io.WriteString(stdout, "\n")
			}
		} else {
			_ = res.WriteJSON(stdout)
		}
		for _, w := range writes {
			if w.err != nil {
				fmt.Fprintf(stderr, "agentjail: --collect-dir: not written: %v\n", w.err)
			}
		}
	} else {
		// The exact bytes the program wrote, in both modes (printed
		// already when they came live).
		if live == nil {
			_, _ = io.WriteString(stdout, res.Stdout)
			_, _ = io.WriteString(stderr, res.Stderr)
		}
		if needsNewline(stdout, stderr, res.Stdout, res.Stderr) {
			_, _ = io.WriteString(stderr, "\n")
		}
		printVerdicts(stderr, res, writes)
		fmt.Fprintln(stderr, summary(res))
	}
	return exitStatus(ra, res, writes)
}

// exitStatus is the command's exit status for a result (docs/contract.md §1.1):
// the program's own; when that is 0, 1 for a failed test under
// --fail-on-test-failure, else 125 when a collected file could not be
// written to --collect-dir.
func exitStatus(ra *runArgs, res *daemon.Result, writes []collectWrite) int {
	if res.ExitCode != 0 {
		return res.ExitCode
	}
	if ra.failOnTests && res.Tests != nil && !res.Tests.AllPassed {
		return 1
	}
	for _, w := range writes {
		if w.err != nil {
			return exitSetup
		}
	}
	return 0
}

// needsNewline tells whether the program's output ends within a line, so
// that agentjail's lines after it must start with a newline. What a
// terminal shows last is the program's stderr, else its stdout when that
// goes to the same place as stderr (or may: a writer that is no file).
func needsNewline(stdout, stderr io.Writer, out, errText string) bool {
	last := errText
	if last == "" && sameFile(stdout, stderr) {
		last = out
	}
	return last != "" && !strings.HasSuffix(last, "\n")
}

// sameFile tells whether a and b may write to the same file: true unless
// both are files known to differ.
func sameFile(a, b io.Writer) bool {
	fa, ok1 := a.(*os.File)
	fb, ok2 := b.(*os.File)
	if !ok1 || !ok2 {
		return true
	}
	sa, err1 := fa.Stat()
	sb, err2 := fb.Stat()
	if err1 != nil || err2 != nil {
		return true
	}
	return os.SameFile(sa, sb)
}

func localRun(ctx context.Context, ra *runArgs) (*daemon.Result, error) {
	if err := nsjail.CheckPython(ra.job.Spec.Python); err != nil {
		return nil, usagef("--python: %v", err)
	}
	// The libraries' configuration from the host's /etc (BLAS's
	// alternatives links, matplotlib's and fontconfig's files): about as
	// long as the runner's set-up (a few ms of reading links and files),
	// so the two are done side by side.
	var etc *nsjail.Etc
	var etcErr error
	etcDone := make(chan struct{})
	go func() {
		defer close(etcDone)
		etc, etcErr = nsjail.HostEtc(ra.job.Spec.ReadOnlyMounts)
	}()
	runner, err := nsjail.NewRunner()
	<-etcDone
	if err != nil {
		return nil, err
	}
	if etcErr != nil {
		return nil, etcErr
	}
	ra.job.Spec.Etc = etc
	res, _, err := ra.job.Run(ctx, runner)
	return res, err
}

// printVerdicts shows test verdicts, collected files (and where
// --collect-dir wrote them) and feedback for people (without --json).
func printVerdicts(w io.Writer, r *daemon.Result, writes []collectWrite) {
	if r.Tests != nil {
		for _, c := range r.Tests.Results {
			mark := "PASS"
			if !c.Passed {
				mark = "FAIL"
			}
			fmt.Fprintf(w, "agentjail: %s %s: %s\n", mark, shownText(c.Name), c.Detail)
		}
		fmt.Fprintf(w, "agentjail: tests %d/%d passed\n", r.Tests.Passed, r.Tests.Total)
	}
	written := map[int]collectWrite{}
	for _, cw := range writes {
		written[cw.index] = cw
	}
	for i, f := range r.Files {
		cw, wrote := written[i]
		switch {
		case f.Error != "":
			fmt.Fprintf(w, "agentjail: not collected %s: %s\n", shownText(f.Path), f.Error)
		case wrote && cw.err != nil:
			fmt.Fprintf(w, "agentjail: collected %s (%s), not written: %v\n", shownText(f.Path), harness.Bytes(f.Size), cw.err)
		case wrote:
			fmt.Fprintf(w, "agentjail: collected %s (%s) → %s\n", shownText(f.Path), harness.Bytes(f.Size), shownText(cw.dest))
		default:
			fmt.Fprintf(w, "agentjail: collected %s (%s; --collect-dir DIR writes it, --json returns its content)\n", shownText(f.Path), harness.Bytes(f.Size))
		}
	}
	printDisplay(w, r, writes)
	if r.Status != string(nsjail.StatusOK) || r.Tests != nil && !r.Tests.AllPassed {
		for _, s := range r.Feedback {
			fmt.Fprintf(w, "agentjail: %s\n", s)
		}
	}
}

// shownText is a name the program chose, safe to print on a terminal: as
// it is when it is UTF-8 without control characters, else quoted.
func shownText(s string) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	return strconv.Quote(s)
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
	if f := forbiddenSummary(r.Seccomp); f != "" {
		b.WriteString(" · " + f)
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

// readProgram is the Python program: -c's CODE, a file's or stdin's.
func (ra *runArgs) readProgram(stdin io.Reader) (string, error) {
	switch pos := ra.positional; {
	case ra.code != nil && len(pos) > 0:
		return "", usagef("give either -c CODE or a program file, not both (got %q)", pos[0])
	case ra.code != nil:
		return *ra.code, nil
	case len(pos) == 0:
		return "", usagef("no program: give FILE.py, -c CODE, or - to read it from stdin")
	case len(pos) > 1:
		return "", usagef("one program only (got %s)", strings.Join(pos, " "))
	case pos[0] == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return "", fmt.Errorf("read program from stdin: %w", err)
		}
		return string(b), nil
	default:
		b, err := os.ReadFile(pos[0])
		if err != nil {
			return "", usagef("read program: %v", err)
		}
		return string(b), nil
	}
}
