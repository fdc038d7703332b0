package main

import (
	"context"
	"encoding/json"
	"errors"
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
// (docs/contract.md §6), a live interpreter kept across calls. Sessions live
// in the daemon, so these commands speak to its socket only (--socket or
// AGENTJAIL_SOCKET). Output and exit statuses are run's: a call prints
// as `agentjail run` prints a run, then its value on stdout.

const sessionUsage = `usage:
  agentjail session start [--socket PATH] [--json] [--environment NAME] [--start warm|cold] [--idle-timeout DUR]
                          [--memory SIZE] [--pids N] [--tmp-size SIZE] [--cpu-time DUR] [--open-files N] [--file-size SIZE]
                          [--env NAME=VALUE]... [--file NAME=HOSTPATH]...
  agentjail session run   ID [--socket PATH] [--json] [--timeout DUR] [--cpu-time DUR] [--output-limit SIZE] [--display-bytes SIZE]
                          [--stdin FILE] [--file NAME=HOSTPATH]... [--collect GLOB]... [--tests FILE.json] (FILE.py | -c CODE | - | --command -- ARGV...)
  agentjail session show  ID [--socket PATH] [--json]
  agentjail session end   ID [--socket PATH]
  agentjail session list  [--socket PATH] [--json]
Every command also takes --url URL --token-file FILE --ca FILE --tls-server-name NAME (or AGENTJAIL_URL,
AGENTJAIL_TOKEN, AGENTJAIL_TLS_SERVER_NAME) for a
daemon's remote listener instead of --socket; a session lives on one node: give every command its endpoint.
`

// The limits a session has, and those each call has.
var (
	sessionLimitKeys = []string{"memory_bytes", "pids", "tmp_bytes", "cpu_time_ms", "open_files", "file_size_bytes"}
	callLimitKeys    = []string{"wall_time_ms", "cpu_time_ms", "output_bytes", "display_bytes"}
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

// sessionCmd is one session command's parsed command line: run's flags
// (runFlags, parseFlags) of the names it takes.
type sessionCmd struct {
	name string // "agentjail session run"
	ra   *runArgs
	live *liveOutput // a call's output is streamed here (remoteStream)
}

// parseSession parses args with run's rows of these names, and every limit
// row when limits (a limit the command does not take is refused by the
// caller, saying where it belongs), and own rows. A usage problem or
// --help is answered: code, ok false. The socket is required: sessions
// live in the daemon.
func parseSession(sub string, args []string, names []string, limits bool, stdout, stderr io.Writer, own ...runFlag) (sc *sessionCmd, code int, ok bool) {
	sc = &sessionCmd{name: "agentjail session " + sub, ra: &runArgs{socket: os.Getenv("AGENTJAIL_SOCKET"), remote: remoteURL{url: os.Getenv("AGENTJAIL_URL")}}}
	names = append(names, "url", "token-file", "ca", "tls-server-name") // every command may go to a remote listener
	var table []runFlag
	for _, f := range runFlags() {
		if slices.Contains(names, f.name) || limits && f.group == "limits" {
			table = append(table, f)
		}
	}
	help, err := parseFlags(append(table, own...), args, sc.ra)
	switch {
	case help:
		fmt.Fprint(stdout, sessionUsage)
		return nil, 0, false
	case err != nil:
		fmt.Fprintf(stderr, "%s: %s\n", sc.name, strings.ReplaceAll(err.Error(), "agentjail run --help", "agentjail session help"))
		return nil, exitUsage, false
	case sc.ra.remote.url != "":
		if err := sc.ra.remote.check(); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", sc.name, err)
			return nil, exitUsage, false
		}
		sc.ra.socket = sc.ra.remote.url // in messages; the URL wins over AGENTJAIL_SOCKET
	case sc.ra.socket == "":
		fmt.Fprintf(stderr, "%s: sessions live in the daemon: give --socket PATH (or set AGENTJAIL_SOCKET), or --url URL (or AGENTJAIL_URL)\n", sc.name)
		return nil, exitUsage, false
	}
	return sc, 0, true
}

// usage reports a usage problem: exit 2.
func (sc *sessionCmd) usage(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "%s: %v\n", sc.name, err)
	return exitUsage
}

// ids checks that exactly want positional arguments came (the session's
// id, when 1).
func (sc *sessionCmd) ids(want int, stderr io.Writer) (int, bool) {
	if n := len(sc.ra.positional); n != want {
		return sc.usage(stderr, usagef("want %d argument(s) (%s), got %d", want, map[int]string{0: "none", 1: "the session's ID"}[want], n)), false
	}
	return 0, true
}

// limitsOnly refuses a limit the command does not take (keys are those it
// takes), saying where it belongs.
func (sc *sessionCmd) limitsOnly(keys []string, elsewhere string) error {
	b, _ := json.Marshal(sc.ra.req.Limits) // the keys of the limits set (omitempty)
	var set map[string]json.RawMessage
	_ = json.Unmarshal(b, &set)
	for _, l := range limitFlags() {
		if _, ok := set[l.Key]; ok && !slices.Contains(keys, l.Key) {
			return usagef("--%s: %s", l.Flag, elsewhere)
		}
	}
	return nil
}

// call sends one request to the daemon. A refusal is reported (exit 125,
// or 2 for an invalid field named by its flag), ok false.
func (sc *sessionCmd) call(ctx context.Context, method, path string, body any, want int, stdout, stderr io.Writer) (b []byte, code int, ok bool) {
	var status int
	var err error
	if sc.live != nil {
		status, b, err = sessionStream(ctx, sc.ra, path, body, sc.live)
	} else {
		status, b, err = sessionDo(ctx, sc.ra, method, path, body)
	}
	if err == nil && status != want {
		err = sessionFailure(status, b)
	}
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		return nil, sc.usage(stderr, err), false
	case err != nil:
		return nil, setupFailed(sc.ra, err, stdout, stderr), false
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
	var idle string
	sc, code, ok := parseSession("start", args, []string{"file", "env", "environment", "start", "json", "socket"}, true, stdout, stderr,
		runFlag{name: "idle-timeout", arg: "DURATION", set: func(_ *runArgs, v string) error { idle = v; return nil }})
	if !ok {
		return code
	}
	if code, ok := sc.ids(0, stderr); !ok {
		return code
	}
	if err := sc.limitsOnly(sessionLimitKeys, "a limit of each call: give it to agentjail session run"); err != nil {
		return sc.usage(stderr, err)
	}
	// The files, variables, environment and limits, read and checked as
	// run reads and checks them (of a program that does nothing).
	ra := sc.ra
	nothing := "pass"
	ra.code = &nothing
	if err := ra.build(strings.NewReader("")); err != nil {
		return sc.usage(stderr, err)
	}
	r := &ra.req
	req := daemon.SessionRequest{Environment: r.Environment, Limits: r.Limits, Env: r.Env, Files: r.Files, Start: r.Start}
	if idle != "" {
		d, err := parseDuration(idle)
		if err != nil {
			return sc.usage(stderr, usagef("--idle-timeout: %v", err))
		}
		ms := d.Milliseconds()
		req.IdleTimeoutMs = &ms
	}
	b, code, ok := sc.call(context.Background(), http.MethodPost, "/v1/sessions", &req, http.StatusCreated, stdout, stderr)
	if !ok {
		return code
	}
	if ra.json {
		show(stdout, b)
		return 0
	}
	var c daemon.SessionCreated
	if err := json.Unmarshal(b, &c); err != nil {
		return setupFailed(ra, fmt.Errorf("daemon on %s: bad answer: %w", ra.socket, err), stdout, stderr)
	}
	fmt.Fprintln(stdout, c.ID)
	fmt.Fprintf(stderr, "agentjail: session %s · %s (%s) · memory %s · idle timeout %s · expires %s\n", c.ID, c.Environment, c.Start,
		harness.Bytes(c.Limits.MemoryBytes), time.Duration(c.IdleTimeoutMs)*time.Millisecond, c.ExpiresAt)
	return 0
}

// callAnswer is the daemon's answer to a call.
type callAnswer struct {
	*daemon.Result
	Value   *string             `json:"value"`
	Session daemon.SessionState `json:"session"`
}

func sessionRun(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// The call's flags are run's, read and checked as run reads them.
	sc, code, ok := parseSession("run", args, []string{"c", "command", "stdin", "file", "collect", "tests", "json", "socket"}, true, stdout, stderr)
	if !ok {
		return code
	}
	ra := sc.ra
	if len(ra.positional) == 0 {
		return sc.usage(stderr, usagef("the session's ID comes first"))
	}
	id := ra.positional[0]
	ra.positional = ra.positional[1:]
	if err := sc.limitsOnly(callLimitKeys, "a limit of the whole session: give it to agentjail session start"); err != nil {
		return sc.usage(stderr, err)
	}
	if err := ra.build(stdin); err != nil {
		var ue *usageError
		if errors.As(err, &ue) {
			return sc.usage(stderr, err)
		}
		return setupFailed(ra, err, stdout, stderr)
	}
	r := &ra.req
	req := daemon.CallRequest{Code: r.Code, Command: r.Command, Stdin: r.Stdin, Files: r.Files, Collect: r.Collect, Tests: r.Tests, Limits: r.Limits}
	if !ra.json { // the output is printed as it comes
		req.Stream, sc.live = true, &liveOutput{stdout, stderr}
	}
	// Ctrl-C ends this command, and with it the connection: the daemon
	// interrupts the call, and the session lives on.
	b, code, ok := sc.call(context.Background(), http.MethodPost, "/v1/sessions/"+id+"/run", &req, http.StatusOK, stdout, stderr)
	if !ok {
		return code
	}
	res, err := daemon.DecodeResult(b) // the exact bytes of its output and file names, as run's
	var a callAnswer
	if err == nil {
		err = json.Unmarshal(b, &a)
	}
	if err != nil {
		return setupFailed(ra, fmt.Errorf("daemon on %s: bad result: %w", ra.socket, err), stdout, stderr)
	}
	if ra.json {
		show(stdout, b)
		return res.ExitCode
	}
	if a.Value != nil { // the output came live
		fmt.Fprintln(stdout, *a.Value)
	}
	if needsNewline(stdout, stderr, "", res.Stderr) {
		_, _ = io.WriteString(stderr, "\n")
	}
	res.Feedback = sessionFeedback(res.Feedback)
	printVerdicts(stderr, res, nil)
	state := fmt.Sprintf("call %d, alive", a.Session.Calls)
	if !a.Session.Alive {
		state = "ended (" + a.Session.EndedReason + ")"
	}
	fmt.Fprintf(stderr, "%s · session %s\n", summary(res), state)
	return res.ExitCode
}

func sessionShow(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	sc, code, ok := parseSession("show", args, []string{"json", "socket"}, false, stdout, stderr)
	if !ok {
		return code
	}
	if code, ok := sc.ids(1, stderr); !ok {
		return code
	}
	b, code, ok := sc.call(context.Background(), http.MethodGet, "/v1/sessions/"+sc.ra.positional[0], nil, http.StatusOK, stdout, stderr)
	if !ok {
		return code
	}
	if sc.ra.json {
		show(stdout, b)
		return 0
	}
	var info daemon.SessionInfo
	if err := json.Unmarshal(b, &info); err != nil {
		return setupFailed(sc.ra, fmt.Errorf("daemon on %s: bad answer: %w", sc.ra.socket, err), stdout, stderr)
	}
	fmt.Fprintln(stdout, sessionLine(&info))
	return 0
}

func sessionList(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	sc, code, ok := parseSession("list", args, []string{"json", "socket"}, false, stdout, stderr)
	if !ok {
		return code
	}
	if code, ok := sc.ids(0, stderr); !ok {
		return code
	}
	b, code, ok := sc.call(context.Background(), http.MethodGet, "/v1/sessions", nil, http.StatusOK, stdout, stderr)
	if !ok {
		return code
	}
	if sc.ra.json {
		show(stdout, b)
		return 0
	}
	var list struct{ Sessions []daemon.SessionInfo }
	if err := json.Unmarshal(b, &list); err != nil {
		return setupFailed(sc.ra, fmt.Errorf("daemon on %s: bad answer: %w", sc.ra.socket, err), stdout, stderr)
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
	sc, code, ok := parseSession("end", args, []string{"socket"}, false, stdout, stderr)
	if !ok {
		return code
	}
	if code, ok := sc.ids(1, stderr); !ok {
		return code
	}
	status, b, err := sessionDo(context.Background(), sc.ra, http.MethodDelete, "/v1/sessions/"+sc.ra.positional[0], nil)
	if err == nil && status == http.StatusGone { // ended already: what end asks for
		var re *remoteError
		if errors.As(sessionFailure(status, b), &re) {
			fmt.Fprintf(stderr, "agentjail: %s\n", re.Message)
		}
		return 0
	}
	if err == nil && status != http.StatusNoContent {
		err = sessionFailure(status, b)
	}
	if err != nil {
		return setupFailed(sc.ra, err, stdout, stderr)
	}
	return 0
}
