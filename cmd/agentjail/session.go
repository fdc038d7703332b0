package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"agentjail/daemon"
	"agentjail/daemon/harness"
)

// `agentjail session start|run|show|end|list`: the daemon's sessions
// (CONTRACT.md §6), a live interpreter kept across calls. Sessions live
// in the daemon, so these commands speak to its socket only (--socket or
// AGENTJAIL_SOCKET). Output and exit statuses are run's: a call prints
// as `agentjail run` prints a run, then its value on stdout.

const sessionUsage = `usage:
  agentjail session start [--socket PATH] [--json] [--environment NAME] [--start warm|cold] [--idle-timeout DUR]
                          [--memory SIZE] [--pids N] [--tmp-size SIZE] [--cpu-time DUR] [--open-files N] [--file-size SIZE]
                          [--env NAME=VALUE]... [--file NAME=HOSTPATH]...
  agentjail session run   ID [--socket PATH] [--json] [--timeout DUR] [--cpu-time DUR] [--output-limit SIZE]
                          [--stdin FILE] [--file NAME=HOSTPATH]... [--collect GLOB]... [--tests FILE.json] (FILE.py | -c CODE | -)
  agentjail session show  ID [--socket PATH] [--json]
  agentjail session end   ID [--socket PATH]
  agentjail session list  [--socket PATH] [--json]
`

// The limits a session has, and those each call has (the rest of run's).
var (
	sessionLimitKeys = []string{"memory_bytes", "pids", "tmp_bytes", "cpu_time_ms", "open_files", "file_size_bytes"}
	callLimitKeys    = []string{"wall_time_ms", "cpu_time_ms", "output_bytes"}
)

func cmdSession(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, sessionUsage)
		return exitUsage
	}
	cmds := map[string]func([]string, io.Reader, io.Writer, io.Writer) int{
		"start": sessionStart, "run": sessionRun, "show": sessionShow, "end": sessionEnd, "list": sessionList,
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, sessionUsage)
		return 0
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "agentjail session: unknown command %q\n%s", args[0], sessionUsage)
		return exitUsage
	}
	return cmd(args[1:], stdin, stdout, stderr)
}

// sessionFlags are the flags every session command has.
type sessionFlags struct {
	fs     *flag.FlagSet
	socket string
	json   bool
}

func newSessionFlags(name string, stderr io.Writer, withJSON bool) *sessionFlags {
	sf := &sessionFlags{fs: flag.NewFlagSet("agentjail session "+name, flag.ContinueOnError)}
	sf.fs.SetOutput(stderr)
	sf.fs.StringVar(&sf.socket, "socket", os.Getenv("AGENTJAIL_SOCKET"), "the daemon's socket (default $AGENTJAIL_SOCKET)")
	if withJSON {
		sf.fs.BoolVar(&sf.json, "json", false, "print the daemon's answer: exactly one JSON object on stdout")
	}
	sf.fs.Usage = func() { fmt.Fprint(stderr, sessionUsage+"\n"); sf.fs.PrintDefaults() }
	return sf
}

// parse parses args, flags before or after the positional ones, of which
// there must be want; a usage problem is answered (exit 2) and ok false.
func (sf *sessionFlags) parse(args []string, want int, stderr io.Writer) (pos []string, code int, ok bool) {
	for {
		if err := sf.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, 0, false
			}
			return nil, exitUsage, false
		}
		if args = sf.fs.Args(); len(args) == 0 {
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	switch {
	case len(pos) != want:
		fmt.Fprintf(stderr, "%s: want %d argument(s) (%s), got %d\n", sf.fs.Name(), want, map[int]string{0: "none", 1: "the session's ID"}[want], len(pos))
		return nil, exitUsage, false
	case sf.socket == "":
		fmt.Fprintf(stderr, "%s: sessions live in the daemon: give --socket PATH or set AGENTJAIL_SOCKET\n", sf.fs.Name())
		return nil, exitUsage, false
	}
	return pos, 0, true
}

// call sends one request to the daemon. A refusal is reported (exit 125,
// or 2 for an invalid field named by its flag), ok false.
func (sf *sessionFlags) call(ctx context.Context, method, path string, body any, want int, stdout, stderr io.Writer) (b []byte, code int, ok bool) {
	status, b, err := remoteDo(ctx, sf.socket, method, path, body)
	if err == nil && status != want {
		err = remoteFailure("session request", status, b)
	}
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %v\n", sf.fs.Name(), err)
		return nil, exitUsage, false
	case err != nil:
		return nil, setupFailed(&runArgs{json: sf.json}, err, stdout, stderr), false
	}
	return b, 0, true
}

// show prints b, the daemon's JSON answer, as it came (--json).
func show(w io.Writer, b []byte) {
	_, _ = w.Write(b)
	if len(b) > 0 && b[len(b)-1] != '\n' {
		_, _ = io.WriteString(w, "\n")
	}
}

func sessionStart(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	sf := newSessionFlags("start", stderr, true)
	var req daemon.SessionRequest
	var files, env multiFlag
	var idle string
	sf.fs.StringVar(&req.Environment, "environment", "", "the daemon's environment to run in (default: default)")
	sf.fs.StringVar(&req.Start, "start", "", "warm or cold (default: the daemon's jail.start)")
	sf.fs.StringVar(&idle, "idle-timeout", "", "end the session after this long without a call (e.g. 10m; default: the daemon's sessions.idle_timeout)")
	sf.fs.Var(&files, "file", "NAME=HOSTPATH: copy a host file to /workspace/NAME at the start (repeatable)")
	sf.fs.Var(&env, "env", "NAME=VALUE: an environment variable of the session (repeatable)")
	readLimits := addLimitFlags(sf.fs, func(key string) bool { return slices.Contains(sessionLimitKeys, key) })
	if _, code, ok := sf.parse(args, 0, stderr); !ok {
		return code
	}
	var err error
	if req.Limits, err = readLimits(); err == nil {
		req.Files, err = hostFiles(files)
	}
	if err == nil && idle != "" {
		var d time.Duration
		if d, err = parseDuration(idle); err == nil {
			ms := d.Milliseconds()
			req.IdleTimeoutMs = &ms
		} else {
			err = usagef("--idle-timeout: %v", err)
		}
	}
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			err = usagef("--env %q: want NAME=VALUE", kv)
			break
		}
		if req.Env == nil {
			req.Env = map[string]string{}
		}
		req.Env[name] = value
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", sf.fs.Name(), err)
		return exitUsage
	}
	b, code, ok := sf.call(context.Background(), http.MethodPost, "/v1/sessions", &req, http.StatusCreated, stdout, stderr)
	if !ok {
		return code
	}
	if sf.json {
		show(stdout, b)
		return 0
	}
	var sc daemon.SessionCreated
	if err := json.Unmarshal(b, &sc); err != nil {
		return setupFailed(nil, fmt.Errorf("daemon on %s: bad answer: %w", sf.socket, err), stdout, stderr)
	}
	fmt.Fprintln(stdout, sc.ID)
	fmt.Fprintf(stderr, "agentjail: session %s · %s (%s) · memory %s · idle timeout %s · expires %s\n", sc.ID, sc.Environment, sc.Start,
		harness.Bytes(sc.Limits.MemoryBytes), time.Duration(sc.IdleTimeoutMs)*time.Millisecond, sc.ExpiresAt)
	return 0
}

// callAnswer is the daemon's answer to a call.
type callAnswer struct {
	daemon.Result
	Value   *string             `json:"value"`
	Session daemon.SessionState `json:"session"`
}

func sessionRun(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "agentjail session run: the session's ID comes first\n%s", sessionUsage)
		return exitUsage
	}
	id := args[0]
	// The call's flags are run's: parsed as run parses them (the same
	// program, stdin, files, collect and tests), then what a call does
	// not take is refused.
	ra, code, ok := parseRunOr("agentjail session run", args[1:], stdin, stdout, stderr)
	if !ok {
		return code
	}
	r := &ra.req
	req := daemon.CallRequest{Code: r.Code, Stdin: r.Stdin, Files: r.Files, Collect: r.Collect, Tests: r.Tests}
	if err := callLimits(r, &req); err != nil {
		fmt.Fprintf(stderr, "agentjail session run: %v\n", err)
		return exitUsage
	}
	if ra.socket == "" {
		fmt.Fprintf(stderr, "agentjail session run: sessions live in the daemon: give --socket PATH or set AGENTJAIL_SOCKET\n")
		return exitUsage
	}
	sf := &sessionFlags{fs: flag.NewFlagSet("agentjail session run", flag.ContinueOnError), socket: ra.socket, json: ra.json}
	// Ctrl-C closes the connection: the daemon interrupts the call (the
	// session lives on), and no result comes.
	ctx, stop := signalContext()
	defer stop()
	b, code, ok := sf.call(ctx, http.MethodPost, "/v1/sessions/"+id+"/run", &req, http.StatusOK, stdout, stderr)
	if !ok {
		return code
	}
	var a callAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		return setupFailed(ra, fmt.Errorf("daemon on %s: bad result: %w", ra.socket, err), stdout, stderr)
	}
	if ra.json {
		show(stdout, b)
		return a.ExitCode
	}
	_, _ = io.WriteString(stdout, a.Stdout)
	_, _ = io.WriteString(stderr, a.Stderr)
	if a.Value != nil {
		fmt.Fprintln(stdout, *a.Value)
	}
	printVerdicts(stderr, &a.Result)
	state := fmt.Sprintf("call %d, alive", a.Session.Calls)
	if !a.Session.Alive {
		state = "ended (" + a.Session.EndedReason + ")"
	}
	fmt.Fprintf(stderr, "%s · session %s\n", summary(&a.Result), state)
	return a.ExitCode
}

// callLimits keeps the limits of run's flags that a call has; another
// is a usage error that says where it belongs.
func callLimits(r *daemon.Request, req *daemon.CallRequest) error {
	if r.OnForbiddenSyscall != "" {
		return usagef("--on-forbidden-syscall: a session's is the daemon's (jail.on_forbidden_syscall)")
	}
	b, _ := json.Marshal(r.Limits) // the keys of the limits set (omitempty)
	var set map[string]json.RawMessage
	_ = json.Unmarshal(b, &set)
	for _, l := range limitFlags() {
		if _, ok := set[l.Key]; ok && !slices.Contains(callLimitKeys, l.Key) {
			return usagef("--%s: a limit of the whole session: give it to agentjail session start", l.Flag)
		}
	}
	req.Limits = r.Limits
	return nil
}

func sessionShow(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	sf := newSessionFlags("show", stderr, true)
	pos, code, ok := sf.parse(args, 1, stderr)
	if !ok {
		return code
	}
	b, code, ok := sf.call(context.Background(), http.MethodGet, "/v1/sessions/"+pos[0], nil, http.StatusOK, stdout, stderr)
	if !ok {
		return code
	}
	if sf.json {
		show(stdout, b)
		return 0
	}
	var info daemon.SessionInfo
	if err := json.Unmarshal(b, &info); err != nil {
		return setupFailed(nil, fmt.Errorf("daemon on %s: bad answer: %w", sf.socket, err), stdout, stderr)
	}
	fmt.Fprintln(stdout, sessionLine(&info))
	return 0
}

func sessionList(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	sf := newSessionFlags("list", stderr, true)
	if _, code, ok := sf.parse(args, 0, stderr); !ok {
		return code
	}
	b, code, ok := sf.call(context.Background(), http.MethodGet, "/v1/sessions", nil, http.StatusOK, stdout, stderr)
	if !ok {
		return code
	}
	if sf.json {
		show(stdout, b)
		return 0
	}
	var list struct{ Sessions []daemon.SessionInfo }
	if err := json.Unmarshal(b, &list); err != nil {
		return setupFailed(nil, fmt.Errorf("daemon on %s: bad answer: %w", sf.socket, err), stdout, stderr)
	}
	for i := range list.Sessions {
		fmt.Fprintln(stdout, sessionLine(&list.Sessions[i]))
	}
	return 0
}

// sessionLine is one session for people.
func sessionLine(s *daemon.SessionInfo) string {
	var b strings.Builder
	state := "alive"
	if !s.Alive {
		state = "ended (" + s.EndedReason + ")"
	}
	fmt.Fprintf(&b, "%s · %s · %s (%s) · %d calls", s.ID, state, s.Environment, s.Start, s.Calls)
	if s.MemoryBytes != nil {
		fmt.Fprintf(&b, " · memory %s", harness.Bytes(*s.MemoryBytes))
	}
	if s.PeakMemoryBytes != nil {
		fmt.Fprintf(&b, " (peak %s)", harness.Bytes(*s.PeakMemoryBytes))
	}
	fmt.Fprintf(&b, " of %s · cpu %s of %s", harness.Bytes(s.Limits.MemoryBytes),
		harness.Duration(time.Duration(s.CPUTimeMs*float64(time.Millisecond))), harness.Duration(time.Duration(s.Limits.CPUTimeMs)*time.Millisecond))
	if s.Alive {
		fmt.Fprintf(&b, " · expires %s", s.ExpiresAt)
	}
	return b.String()
}

func sessionEnd(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	sf := newSessionFlags("end", stderr, false)
	pos, code, ok := sf.parse(args, 1, stderr)
	if !ok {
		return code
	}
	status, b, err := remoteDo(context.Background(), sf.socket, http.MethodDelete, "/v1/sessions/"+pos[0], nil)
	if err == nil && status == http.StatusGone { // ended already: what end asks for
		var re *remoteError
		if errors.As(remoteFailure("session request", status, b), &re) {
			fmt.Fprintf(stderr, "agentjail: %s\n", re.Message)
		}
		return 0
	}
	if err == nil && status != http.StatusNoContent {
		err = remoteFailure("session request", status, b)
	}
	if err != nil {
		return setupFailed(nil, err, stdout, stderr)
	}
	return 0
}
