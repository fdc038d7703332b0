package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentjail/daemon"
)

// mcpTools are the tools of `agentjail mcp` (docs/contract.md §9) over one
// backend. A tool's answer is text an agent can act on (mcp_text.go) and
// the daemon's whole answer as structured content. A program that fails
// is a normal answer; the call is an error (isError) only when the jail
// could not run it: the daemon refused the request or could not set the
// jail up, or it could not be reached.
type mcpTools struct {
	b          jailBackend
	log        *slog.Logger
	cfg        *daemon.Config // the limits' defaults shown in the schemas
	daemonMode bool           // cfg is the built-in one; the daemon's may differ

	// stopping ends every call in flight when the server stops (the client
	// went away, or a signal): the daemon then ends its jail.
	stopping context.Context
	inflight sync.WaitGroup

	mu       sync.Mutex
	sessions map[string]bool // started here and not known to have ended
}

func (t *mcpTools) register(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{
		Name:  "run_python",
		Title: "Run Python in a jail",
		Description: "Runs a Python 3 program in a fresh, isolated jail (no network unless network names a policy, its own empty /workspace, limited memory, time, processes and output) " +
			"and answers when it has ended. The answer's text starts with one summary line (exit status or kill reason, wall and CPU time, peak memory), " +
			"then stdout, stderr, the uncaught exception with its line, test verdicts, what the network refused (with network) and feedback sentences saying what to fix; long output is cut in the text " +
			"(the structured result has all of it). A program that raises, crashes or is killed by a limit is a normal answer (status error, signaled or killed).",
		InputSchema:  runPythonSchema(t.cfg, t.daemonMode),
		OutputSchema: resultSchema(false),
		Annotations:  &mcp.ToolAnnotations{OpenWorldHint: new(false), DestructiveHint: new(false)},
	}, t.runPython)
	t.registerCommand(s) // run_command (mcp_command.go)
	mcp.AddTool(s, &mcp.Tool{
		Name:  "session_start",
		Title: "Start a Python session",
		Description: "Starts a session: a live Python interpreter in one jail, kept across calls (variables, imports and files stay), like a notebook's kernel. " +
			"With network, its calls may reach the hosts a network policy allows. Answers with its id (s-...), its limits and when it expires. Run code in it with session_run; end it with session_end " +
			"(it also ends after its idle timeout, and when this MCP server stops).",
		InputSchema: sessionStartSchema(t.cfg, t.daemonMode),
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: new(false), DestructiveHint: new(false)},
	}, t.sessionStart)
	mcp.AddTool(s, &mcp.Tool{
		Name:  "session_run",
		Title: "Run code in a Python session",
		Description: "Runs code in a session's interpreter, where earlier calls' variables are, or a shell command (command) in the session's jail, " +
			"where the files of earlier calls are. Answers as run_python does, plus the trailing expression's value (repr) " +
			"and the session's state (calls so far, alive). A call that passes its wall time is interrupted and the session lives; " +
			"one that passes the session's memory or CPU limit ends the session (the answer says why).",
		InputSchema:  sessionRunSchema(t.cfg, t.daemonMode),
		OutputSchema: resultSchema(true),
		Annotations:  &mcp.ToolAnnotations{OpenWorldHint: new(false), DestructiveHint: new(false)},
	}, t.sessionRun)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "session_end",
		Title:       "End a Python session",
		Description: "Ends a session that session_start started: its interpreter and files are gone.",
		InputSchema: sessionEndSchema(),
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: new(false), IdempotentHint: true},
	}, t.sessionEnd)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "list_environments",
		Title:       "List Python environments",
		Description: "Lists the Python environments a run or a session may name: each with its Python version and the packages it can import beyond the standard library.",
		InputSchema: object("", map[string]*jsonschema.Schema{}),
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: new(false), ReadOnlyHint: true, IdempotentHint: true},
	}, t.listEnvironments)
}

// The tools' arguments, as their schemas (mcp_schema.go) describe them.
type (
	runPythonArgs struct {
		Code        string                 `json:"code"`
		Stdin       *string                `json:"stdin,omitempty"`
		Environment string                 `json:"environment,omitempty"`
		Env         map[string]string      `json:"env,omitempty"`
		Limits      *daemon.RequestLimits  `json:"limits,omitempty"`
		Files       []daemon.RequestFile   `json:"files,omitempty"`
		Collect     []string               `json:"collect,omitempty"`
		Tests       json.RawMessage        `json:"tests,omitempty"`
		Network     *daemon.RequestNetwork `json:"network,omitempty"` // mcp_network.go
	}
	sessionStartArgs struct {
		Environment   string                 `json:"environment,omitempty"`
		Env           map[string]string      `json:"env,omitempty"`
		Limits        *daemon.RequestLimits  `json:"limits,omitempty"`
		Files         []daemon.RequestFile   `json:"files,omitempty"`
		IdleTimeoutMs *int64                 `json:"idle_timeout_ms,omitempty"`
		Network       *daemon.RequestNetwork `json:"network,omitempty"`
	}
	sessionRunArgs struct {
		SessionID string                `json:"session_id"`
		Code      *string               `json:"code,omitempty"`
		Command   *string               `json:"command,omitempty"` // a shell command line instead of code (mcp_command.go)
		Stdin     *string               `json:"stdin,omitempty"`
		Limits    *daemon.RequestLimits `json:"limits,omitempty"`
		Files     []daemon.RequestFile  `json:"files,omitempty"`
		Collect   []string              `json:"collect,omitempty"`
		Tests     json.RawMessage       `json:"tests,omitempty"`
	}
	sessionEndArgs struct {
		SessionID string `json:"session_id"`
	}
)

// toolError is the answer of a call the jail could not run: isError, and
// text that says what to fix.
func toolError(format string, a ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, a...)}}}
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// call sends one request for a tool, in a context that the server's stop
// also cancels, and returns the answer's body when its status is want.
// Otherwise it returns the tool error that says why (what: "run").
func (t *mcpTools) call(ctx context.Context, what, method, path string, body any, want ...int) (status int, b []byte, fail *mcp.CallToolResult) {
	return t.callLive(ctx, nil, what, method, path, body, want...)
}

// callLive is call, with the output streamed to out as it comes (nil:
// not streamed; the body must ask for the stream).
func (t *mcpTools) callLive(ctx context.Context, out *liveOutput, what, method, path string, body any, want ...int) (status int, b []byte, fail *mcp.CallToolResult) {
	t.inflight.Add(1)
	defer t.inflight.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(t.stopping, cancel)
	defer stop()
	var err error
	if out != nil {
		status, b, err = t.b.stream(ctx, path, body, out)
	} else {
		status, b, err = t.b.do(ctx, method, path, body)
	}
	if err != nil {
		return 0, nil, toolError("agentjail could not %s: %v", what, err)
	}
	if !slices.Contains(want, status) {
		return status, b, toolError("%s", refusal(t.b, what, status, b))
	}
	return status, b, nil
}

// refusal says why the daemon refused a request, in its own words: its
// message names the field to fix in the tools' own argument names.
func refusal(b jailBackend, what string, status int, body []byte) string {
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error.Code == "" {
		return fmt.Sprintf("%s refused to %s (HTTP %d): %s", b.where(), what, status, strings.TrimSpace(string(body)))
	}
	msg := fmt.Sprintf("%s refused to %s (%d %s): %s", b.where(), what, status, e.Error.Code, e.Error.Message)
	switch status {
	case http.StatusTooManyRequests:
		msg += " (it is busy: try again in a few seconds)"
	case http.StatusRequestEntityTooLarge:
		msg += " (send less: smaller code, files or stdin)"
	}
	return msg
}

func (t *mcpTools) runPython(ctx context.Context, call *mcp.CallToolRequest, in runPythonArgs) (*mcp.CallToolResult, any, error) {
	req := &daemon.Request{Code: &in.Code, Stdin: in.Stdin, Environment: in.Environment, Env: in.Env, Limits: in.Limits, Files: in.Files, Collect: in.Collect, Network: in.Network}
	if len(in.Tests) > 0 && string(in.Tests) != "null" {
		tests, err := daemon.DecodeTests(in.Tests)
		if err != nil {
			return toolError("tests: %v", err), nil, nil
		}
		req.Tests = tests
	}
	return t.run(ctx, call, "run the program", req)
}

// run sends a run request (run_python's, run_command's) with progress
// when the client asked for it, and answers with the result: its text,
// its display, and the daemon's object as structured content.
func (t *mcpTools) run(ctx context.Context, call *mcp.CallToolRequest, what string, req *daemon.Request) (*mcp.CallToolResult, any, error) {
	out, prog := liveProgress(ctx, call) // mcp_progress.go
	req.Stream = out != nil
	_, b, fail := t.callLive(ctx, out, what, http.MethodPost, "/v1/run", req, http.StatusOK)
	prog.flush()
	if fail != nil {
		return fail, nil, nil
	}
	res, err := daemon.DecodeResult(b)
	if err != nil {
		return toolError("%s answered with a result this build cannot read: %v", t.b.where(), err), nil, nil
	}
	return withDisplay(textResult(resultText(res, nil, nil)), res), json.RawMessage(b), nil
}

func (t *mcpTools) sessionStart(ctx context.Context, _ *mcp.CallToolRequest, in sessionStartArgs) (*mcp.CallToolResult, any, error) {
	req := &daemon.SessionRequest{Environment: in.Environment, Env: in.Env, Limits: in.Limits, Files: in.Files, IdleTimeoutMs: in.IdleTimeoutMs, Network: in.Network}
	_, b, fail := t.call(ctx, "start a session", http.MethodPost, "/v1/sessions", req, http.StatusCreated)
	if fail != nil {
		return fail, nil, nil
	}
	var c daemon.SessionCreated
	if err := json.Unmarshal(b, &c); err != nil || c.ID == "" {
		return toolError("%s answered with a session this build cannot read: %s", t.b.where(), b), nil, nil
	}
	t.mu.Lock()
	t.sessions[c.ID] = true
	t.mu.Unlock()
	return textResult(sessionStartedText(&c) + networkAsked(in.Network)), json.RawMessage(b), nil
}

// mine checks that session id was started through this server: a model
// reaches no other session of the user.
func (t *mcpTools) mine(id string) *mcp.CallToolResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sessions[id] {
		return nil
	}
	var ids []string
	for s := range t.sessions {
		ids = append(ids, s)
	}
	slices.Sort(ids)
	if len(ids) == 0 {
		return toolError("session_id %q: no session of this MCP server has that id (none is alive; start one with session_start)", id)
	}
	return toolError("session_id %q: no session of this MCP server has that id (alive: %s)", id, strings.Join(ids, ", "))
}

func (t *mcpTools) forget(id string) {
	t.mu.Lock()
	delete(t.sessions, id)
	t.mu.Unlock()
}

func (t *mcpTools) sessionRun(ctx context.Context, call *mcp.CallToolRequest, in sessionRunArgs) (*mcp.CallToolResult, any, error) {
	if fail := t.mine(in.SessionID); fail != nil {
		return fail, nil, nil
	}
	req := &daemon.CallRequest{Stdin: in.Stdin, Files: in.Files, Collect: in.Collect, Limits: in.Limits}
	if fail := callProgram(req, in); fail != nil {
		return fail, nil, nil
	}
	if len(in.Tests) > 0 && string(in.Tests) != "null" {
		tests, err := daemon.DecodeTests(in.Tests)
		if err != nil {
			return toolError("tests: %v", err), nil, nil
		}
		req.Tests = tests
	}
	out, prog := liveProgress(ctx, call)
	req.Stream = out != nil
	status, b, fail := t.callLive(ctx, out, "run the call", http.MethodPost, "/v1/sessions/"+in.SessionID+"/run", req, http.StatusOK)
	prog.flush()
	if status == http.StatusGone || status == http.StatusNotFound {
		t.forget(in.SessionID)
	}
	if fail != nil {
		return fail, nil, nil
	}
	res, err := daemon.DecodeResult(b)
	var a callAnswer
	if err == nil {
		err = json.Unmarshal(b, &a)
	}
	if err != nil {
		return toolError("%s answered with a result this build cannot read: %v", t.b.where(), err), nil, nil
	}
	if !a.Session.Alive {
		t.forget(in.SessionID)
	}
	return withDisplay(textResult(resultText(res, a.Value, &a.Session)), res), json.RawMessage(b), nil
}

func (t *mcpTools) sessionEnd(ctx context.Context, _ *mcp.CallToolRequest, in sessionEndArgs) (*mcp.CallToolResult, any, error) {
	if fail := t.mine(in.SessionID); fail != nil {
		return fail, nil, nil
	}
	status, _, fail := t.call(ctx, "end the session", http.MethodDelete, "/v1/sessions/"+in.SessionID, nil, http.StatusNoContent, http.StatusGone, http.StatusNotFound)
	if fail != nil {
		return fail, nil, nil
	}
	t.forget(in.SessionID)
	if status != http.StatusNoContent {
		return textResult(fmt.Sprintf("session %s had ended already", in.SessionID)), map[string]any{"id": in.SessionID, "ended": true}, nil
	}
	return textResult(fmt.Sprintf("session %s ended", in.SessionID)), map[string]any{"id": in.SessionID, "ended": true}, nil
}

func (t *mcpTools) listEnvironments(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	_, b, fail := t.call(ctx, "list the environments", http.MethodGet, "/v1/environments", nil, http.StatusOK)
	if fail != nil {
		return fail, nil, nil
	}
	var list struct {
		Environments []daemon.EnvironmentInfo `json:"environments"`
		Policies     map[string][]string      `json:"network_policies"` // nil from a daemon that does not say
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return toolError("%s answered with environments this build cannot read: %v", t.b.where(), err), nil, nil
	}
	text := environmentsText(list.Environments)
	if p := policiesText(list.Policies); p != "" {
		text += "\n" + p
	}
	return textResult(text), json.RawMessage(b), nil
}

// endSessions ends the sessions started here (the client went away).
func (t *mcpTools) endSessions(ctx context.Context) {
	t.mu.Lock()
	ids := make([]string, 0, len(t.sessions))
	for id := range t.sessions {
		ids = append(ids, id)
	}
	t.sessions = map[string]bool{}
	t.mu.Unlock()
	for _, id := range ids {
		status, b, err := t.b.do(ctx, http.MethodDelete, "/v1/sessions/"+id, nil)
		switch {
		case err != nil:
			t.log.Warn("agentjail mcp: a session could not be ended", "session", id, "err", err)
		case status != http.StatusNoContent && status != http.StatusGone && status != http.StatusNotFound:
			t.log.Warn("agentjail mcp: a session could not be ended", "session", id, "status", status, "answer", string(b))
		default:
			t.log.Info("agentjail mcp: session ended with the client", "session", id)
		}
	}
}
