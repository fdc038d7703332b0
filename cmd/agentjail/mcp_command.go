package main

import (
	"context"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentjail/daemon"
)

// run_command: a shell command in a fresh jail (docs/contract.md §9). Its
// command is one string that bash -c runs, as an agent writes a command
// line (pipes, globs, &&); the request's command is ["bash", "-c", it].

type runCommandArgs struct {
	Command     string                 `json:"command"`
	Stdin       *string                `json:"stdin,omitempty"`
	Environment string                 `json:"environment,omitempty"`
	Env         map[string]string      `json:"env,omitempty"`
	Limits      *daemon.RequestLimits  `json:"limits,omitempty"`
	Files       []daemon.RequestFile   `json:"files,omitempty"`
	Collect     []string               `json:"collect,omitempty"`
	Network     *daemon.RequestNetwork `json:"network,omitempty"` // mcp_network.go
}

func (t *mcpTools) registerCommand(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{
		Name:  "run_command",
		Title: "Run a shell command in a jail",
		Description: "Runs a shell command line with bash -c in a fresh, isolated jail (no network unless network names a policy, its own empty /workspace, limited memory, time, processes and output), " +
			"e.g. \"ls -la /usr/lib/python3/dist-packages | head\" or \"pip list\". Only the programs of the environment's read-only /usr exist; a missing one exits 127 " +
			"and the feedback names it. The answer is as run_python's: a summary line (exit status or kill reason, wall and CPU time, peak memory), stdout, stderr, feedback.",
		InputSchema:  runCommandSchema(t.cfg, t.daemonMode),
		OutputSchema: resultSchema(false),
		Annotations:  &mcp.ToolAnnotations{OpenWorldHint: new(false), DestructiveHint: new(false)},
	}, t.runCommand)
}

func runCommandSchema(cfg *daemon.Config, daemonMode bool) *jsonschema.Schema {
	return object("", map[string]*jsonschema.Schema{
		"command":     str("A shell command line, run as bash -c COMMAND in /workspace, e.g. \"wc -l data.csv && sort data.csv | uniq -c\". Its exit status is the result's."),
		"stdin":       str("Text given to the command on its standard input (default: none)."),
		"environment": str("Environment to run in (list_environments names them); its /usr decides which programs exist. Default \"default\"."),
		"env":         {Type: "object", AdditionalProperties: str(""), Description: "Environment variables for the command, NAME: value."},
		"limits":      limitsSchema(cfg, daemonMode, allLimitKeys(), "Limits of this run; each one omitted takes its default. A run that passes one is killed and the result says which (kill_reason)."),
		"files":       filesSchema(),
		"collect":     collectSchema(),
		"network":     networkSchema(cfg, daemonMode, "this run"),
	}, "command")
}

func (t *mcpTools) runCommand(ctx context.Context, call *mcp.CallToolRequest, in runCommandArgs) (*mcp.CallToolResult, any, error) {
	req := &daemon.Request{Command: []string{"bash", "-c", in.Command}, Stdin: in.Stdin, Environment: in.Environment, Env: in.Env,
		Limits: in.Limits, Files: in.Files, Collect: in.Collect, Network: in.Network}
	return t.run(ctx, call, "run the command", req)
}

// callProgram puts a session_run's program into req: its code, or its
// command as ["bash", "-c", command]; exactly one of them.
func callProgram(req *daemon.CallRequest, in sessionRunArgs) *mcp.CallToolResult {
	switch {
	case in.Code != nil && in.Command != nil:
		return toolError("give code or command, not both: code runs Python in the session's interpreter, command a shell command line in its jail")
	case in.Command != nil:
		if *in.Command == "" {
			return toolError("command is empty: give a shell command line, e.g. \"ls -la\"")
		}
		req.Command = []string{"bash", "-c", *in.Command}
	case in.Code != nil:
		req.Code = in.Code
	default:
		return toolError("code or command is required: code runs Python in the session's interpreter, command a shell command line in its jail")
	}
	return nil
}
