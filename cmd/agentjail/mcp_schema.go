package main

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"agentjail/daemon"
)

// The input schemas of the MCP tools (mcp_tools.go): the run request's and
// the session requests' fields (docs/contract.md §3, §6) in their own
// names, each with a description a model reads to use it. The limits are
// rows of the daemon's limits table, with the defaults and maxima of the
// configuration in force (without a daemon) or the built-in ones (a
// daemon's own configuration may differ; it names what it refuses).

func str(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: desc}
}

func object(desc string, props map[string]*jsonschema.Schema, required ...string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Description: desc, Properties: props, Required: required,
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
}

// limitsSchema is the "limits" object with the limits of keys.
func limitsSchema(cfg *daemon.Config, daemonMode bool, keys []string, desc string) *jsonschema.Schema {
	def, max := limitsByKey(cfg.Limits.Default), limitsByKey(cfg.Limits.Max)
	props := map[string]*jsonschema.Schema{}
	for _, l := range limitFlags() {
		if !slices.Contains(keys, l.Key) {
			continue
		}
		one := 1.0
		help, _, _ := strings.Cut(l.Help, " (e.g.") // the flag's example, in its units
		d := fmt.Sprintf("%s%s, in %s. Default %s, at most %s.", strings.ToUpper(help[:1]), help[1:], unitName(l.Unit),
			schemaLimit(l, def[l.Key]), schemaLimit(l, max[l.Key]))
		if daemonMode {
			d += " (The daemon's configuration may set other defaults and maxima.)"
		}
		props[l.Key] = &jsonschema.Schema{Type: "integer", Minimum: &one, Description: d}
	}
	return object(desc, props)
}

func unitName(u daemon.LimitUnit) string {
	switch u {
	case daemon.UnitBytes:
		return "bytes"
	case daemon.UnitMs:
		return "milliseconds"
	}
	return "count"
}

// schemaLimit is a limit's value as the schema gives it: the number the
// argument takes, then the value in the flags' units.
func schemaLimit(l daemon.Limit, v int64) string {
	if l.Unit == daemon.UnitCount {
		return fmt.Sprint(v)
	}
	return fmt.Sprintf("%d (%s)", v, l.Human(v))
}

// limitsByKey reads v by the limits' keys (its TOML names).
func limitsByKey(v daemon.LimitValues) map[string]int64 {
	out := map[string]int64{}
	rv := reflect.ValueOf(v)
	for i := 0; i < rv.NumField(); i++ {
		if f := rv.Field(i); f.CanInt() {
			out[rv.Type().Field(i).Tag.Get("toml")] = f.Int()
		}
	}
	return out
}

func filesSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Description: "Files written into the program's working directory /workspace before it runs.",
		Items: object("One file.", map[string]*jsonschema.Schema{
			"path":     str("Path relative to /workspace, e.g. data/in.csv (no .., not absolute)."),
			"content":  str("The file's content: text, or base64 when encoding is base64."),
			"encoding": {Type: "string", Enum: []any{"utf-8", "base64"}, Description: "utf-8 (default) or base64."},
		}, "path", "content")}
}

func collectSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Items: str("A path or glob relative to /workspace."),
		Description: "Files to bring back after the run, e.g. [\"out/*.png\", \"result.json\"]: each comes back in the structured result's files (base64), with its size; symbolic links are never followed and the total is capped."}
}

func testsSchema() *jsonschema.Schema {
	anyJSON := anyOfTypes("Any JSON value.", jsonTypes...)
	return object("Tests of one function the code defines: each case calls it and the verdict is decided outside the jail (the code cannot see the expected values).",
		map[string]*jsonschema.Schema{
			"function": str("Name of the function to call."),
			"cases": {Type: "array", Description: "The calls.", Items: object("One call and what it must give.", map[string]*jsonschema.Schema{
				"name":               str("Name shown in the verdict (default: case N)."),
				"args":               {Type: "array", Items: anyJSON, Description: "Positional arguments (JSON values)."},
				"kwargs":             {Type: "object", Description: "Keyword arguments (JSON values)."},
				"expected":           anyOfTypes("Expected return value, compared as JSON (tuples are lists; 3 equals 3.0). Omit to check nothing; null expects None.", jsonTypes...),
				"expected_type":      str("Expected type name of the return value, as type(x).__name__ gives it (e.g. int, list)."),
				"expected_exception": str("Expected exception class name; a subclass passes too."),
			})},
		}, "function", "cases")
}

// anyOfTypes is a value of one of types, spelt as anyOf branches of one
// type each: the spelling that clients which map a schema onto a
// single-type dialect keep (the MCP inspector's --strict check).
func anyOfTypes(desc string, types ...string) *jsonschema.Schema {
	s := &jsonschema.Schema{Description: desc}
	for _, t := range types {
		s.AnyOf = append(s.AnyOf, &jsonschema.Schema{Type: t})
	}
	return s
}

// jsonTypes is every JSON value, said outright.
var jsonTypes = []string{"null", "boolean", "object", "array", "number", "string"}

func environmentSchema() *jsonschema.Schema {
	return str("Python environment to run in (list_environments names them); default \"default\".")
}

func codeSchema() *jsonschema.Schema {
	return str("Python 3 source code to run, as a file run by python3. Its stdout and stderr come back.")
}

func runPythonSchema(cfg *daemon.Config, daemonMode bool) *jsonschema.Schema {
	return object("", map[string]*jsonschema.Schema{
		"code":        codeSchema(),
		"stdin":       str("Text given to the program on its standard input (default: none)."),
		"environment": environmentSchema(),
		"env":         {Type: "object", AdditionalProperties: str(""), Description: "Environment variables for the program, NAME: value."},
		"limits":      limitsSchema(cfg, daemonMode, allLimitKeys(), "Limits of this run; each one omitted takes its default. A run that passes one is killed and the result says which (kill_reason)."),
		"files":       filesSchema(),
		"collect":     collectSchema(),
		"tests":       testsSchema(),
		"network":     networkSchema(cfg, daemonMode, "this run"),
	}, "code")
}

func sessionStartSchema(cfg *daemon.Config, daemonMode bool) *jsonschema.Schema {
	return object("", map[string]*jsonschema.Schema{
		"environment":     environmentSchema(),
		"env":             {Type: "object", AdditionalProperties: str(""), Description: "Environment variables of the session's interpreter, NAME: value."},
		"limits":          limitsSchema(cfg, daemonMode, sessionLimitKeys, "Limits of the whole session (memory, processes, scratch space, CPU time of all its calls together...); each one omitted takes its default. Wall time and output are limits of each call (session_run)."),
		"files":           filesSchema(),
		"idle_timeout_ms": {Type: "integer", Description: fmt.Sprintf("The session ends after this many milliseconds without a call. Default %s.", time.Duration(cfg.Sessions.IdleTimeout))},
		"network":         networkSchema(cfg, daemonMode, "all calls of the session"),
	})
}

func sessionRunSchema(cfg *daemon.Config, daemonMode bool) *jsonschema.Schema {
	return object("", map[string]*jsonschema.Schema{
		"session_id": str("The id session_start returned (s-...)."),
		"code":       str("Python 3 code to run in the session's interpreter, as a notebook cell: variables, imports and functions of earlier calls are there. The value of a trailing expression comes back as value (its repr). Give code or command, not both."),
		"command":    str("Instead of code: a shell command line, run as bash -c COMMAND in the session's jail and its /workspace (the files earlier calls wrote are there), e.g. \"ls -la && wc -l out.csv\". Its output is the call's, its exit status the call's status; the interpreter's variables are not touched. A program the environment lacks exits 127."),
		"stdin":      str("Text given to the code on its standard input (default: none)."),
		"limits":     limitsSchema(cfg, daemonMode, callLimitKeys, "Limits of this call; each one omitted takes its default. A call past its wall time is interrupted (KeyboardInterrupt) and the session lives."),
		"files":      filesSchema(),
		"collect":    collectSchema(),
		"tests":      testsSchema(),
	}, "session_id")
}

func sessionEndSchema() *jsonschema.Schema {
	return object("", map[string]*jsonschema.Schema{"session_id": str("The id session_start returned (s-...).")}, "session_id")
}

// allLimitKeys are the limits a run may set.
func allLimitKeys() []string {
	var keys []string
	for _, l := range limitFlags() {
		keys = append(keys, l.Key)
	}
	return keys
}

// resultSchema describes the structured result of a run or a call: the
// result object of docs/contract.md §3 (plus value and session for a
// call). It describes and does not constrain: a daemon may add fields.
func resultSchema(call bool) *jsonschema.Schema {
	props := map[string]*jsonschema.Schema{
		"status":            {Type: "string", Description: "ok (exit 0), error (non-zero exit, e.g. an uncaught exception), signaled (a crash), killed (a limit ended it; kill_reason says which)."},
		"exit_code":         {Type: "integer", Description: "The program's exit code; 128+N when it died by signal N."},
		"kill_reason":       {Type: "string", Description: "Empty unless killed: memory_limit, wall_timeout, cpu_timeout, output_limit, seccomp, file_size_limit, cancelled, shutdown."},
		"stdout":            {Type: "string", Description: "Everything the program wrote on stdout (up to limits.output_bytes)."},
		"stderr":            {Type: "string", Description: "Everything the program wrote on stderr."},
		"exception":         anyOfTypes("null, or the uncaught exception: type, message, line (in the submitted code), traceback.", "object", "null"),
		"tests":             anyOfTypes("null, or the verdicts: total, passed, failed, all_passed, results [{name, passed, output, detail}].", "object", "null"),
		"feedback":          {Type: "array", Items: &jsonschema.Schema{Type: "string"}, Description: "Short sentences saying what went wrong and what to change; empty when all went well."},
		"files":             {Type: "array", Items: &jsonschema.Schema{Type: "object"}, Description: "Collected files: path, size, encoding, content (or error)."},
		"display":           {Type: "array", Items: &jsonschema.Schema{Type: "object"}, Description: "What a notebook would show, in order: matplotlib figures (image/png, data in base64) and the trailing value's HTML or Markdown: mime, data, bytes. The images are in the answer's content too."},
		"display_truncated": {Type: "boolean", Description: "Entries were dropped past limits.display_bytes."},
		"wall_time_ms":      {Type: "number", Description: "Wall-clock time of the run in milliseconds."},
		"cpu_time_ms":       {Type: "number", Description: "CPU time of every process of the run in milliseconds."},
		"peak_memory_bytes": anyOfTypes("The most memory the run held at once.", "integer", "null"),
	}
	if call {
		props["value"] = anyOfTypes("repr of the code's trailing expression, or null.", "string", "null")
		props["session"] = &jsonschema.Schema{Type: "object", Description: "The session after the call: id, calls, alive, ended_reason."}
	}
	return &jsonschema.Schema{Type: "object", Properties: props}
}
