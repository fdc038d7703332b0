package main

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"agentjail/daemon"
	"agentjail/daemon/harness"
)

// The text of the MCP tools' answers: what a model reads to act. The
// structured content holds the whole result; the text keeps what matters
// for the next step and says what it cut.

// How much of stdout and stderr the text shows: the start and the end of
// each (a traceback is at the end of stderr).
const (
	textStdoutBytes = 16 << 10
	textStderrBytes = 8 << 10
)

// resultText is the text of a run's or a call's result: the summary line
// of `agentjail run` (with the session's state after a call), the
// output, the trailing value, the exception, the tests, the collected
// files, the feedback.
func resultText(r *daemon.Result, value *string, sess *daemon.SessionState) string {
	var b strings.Builder
	b.WriteString(summary(r))
	if sess != nil {
		if sess.Alive {
			fmt.Fprintf(&b, " · session %s: call %d, alive", sess.ID, sess.Calls)
		} else {
			fmt.Fprintf(&b, " · session %s ended (%s)", sess.ID, sess.EndedReason)
		}
	}
	b.WriteString("\n")
	stream(&b, "stdout", r.Stdout, r.StdoutTruncated, textStdoutBytes)
	stream(&b, "stderr", r.Stderr, r.StderrTruncated, textStderrBytes)
	if value != nil {
		v, note := trimmed(*value, textStderrBytes)
		fmt.Fprintf(&b, "value: %s%s\n", v, note)
	}
	if e := r.Exception; e != nil {
		fmt.Fprintf(&b, "exception: %s: %s", e.Type, e.Message)
		if e.Line > 0 {
			fmt.Fprintf(&b, " (line %d)", e.Line)
		}
		b.WriteString("\n")
	}
	if t := r.Tests; t != nil {
		fmt.Fprintf(&b, "tests: %d/%d passed\n", t.Passed, t.Total)
		for _, c := range t.Results {
			mark := "PASS"
			if !c.Passed {
				mark = "FAIL"
			}
			fmt.Fprintf(&b, "  %s %s: %s\n", mark, c.Name, c.Detail)
		}
	}
	for _, f := range r.Files {
		if f.Error != "" {
			fmt.Fprintf(&b, "not collected %s: %s\n", f.Path, f.Error)
		} else {
			fmt.Fprintf(&b, "collected %s (%s; its content is in the structured result's files)\n", f.Path, harness.Bytes(f.Size))
		}
	}
	b.WriteString(networkText(r.Network)) // mcp_network.go
	if len(r.Feedback) > 0 {
		b.WriteString("feedback:\n")
		for _, s := range r.Feedback {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// stream writes one of the program's outputs, cut to max bytes.
func stream(b *strings.Builder, name, s string, jailCut bool, max int) {
	if s == "" && !jailCut {
		return
	}
	shown, note := trimmed(s, max)
	if jailCut {
		note += " (the jail kept no more: limits.output_bytes)"
	}
	fmt.Fprintf(b, "--- %s%s ---\n%s", name, note, shown)
	if !strings.HasSuffix(shown, "\n") {
		b.WriteString("\n")
	}
}

// trimmed is s when it is at most max bytes, else its first two thirds
// and last third of max with a mark where it is cut; note says what was
// cut ("" when nothing).
func trimmed(s string, max int) (shown, note string) {
	if len(s) <= max {
		return s, ""
	}
	head, tail := max*2/3, max/3
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	cut := start - head
	return s[:head] + fmt.Sprintf("\n[… %d bytes cut …]\n", cut) + s[start:],
		fmt.Sprintf(" (%d bytes; %d cut from the middle here, the structured result has all)", len(s), cut)
}

// sessionStartedText is the answer to session_start.
func sessionStartedText(c *daemon.SessionCreated) string {
	l := c.Limits
	return fmt.Sprintf("session %s started · environment %s (%s) · memory %s · pids %d · scratch %s · cpu %s for all calls · idle timeout %s · expires %s\n"+
		"Run code in it with session_run (session_id %q); end it with session_end.",
		c.ID, c.Environment, c.Start, harness.Bytes(l.MemoryBytes), l.Pids, harness.Bytes(l.TmpBytes),
		time.Duration(l.CPUTimeMs)*time.Millisecond, time.Duration(c.IdleTimeoutMs)*time.Millisecond, c.ExpiresAt, c.ID)
}

// environmentsText is the answer to list_environments.
func environmentsText(envs []daemon.EnvironmentInfo) string {
	var b strings.Builder
	for _, e := range envs {
		fmt.Fprintf(&b, "%s: Python %s (%s)", e.Name, e.PythonVersion, e.Python)
		if len(e.Packages) > 0 {
			fmt.Fprintf(&b, "; packages: %s", strings.Join(e.Packages, ", "))
		} else {
			b.WriteString("; the standard library only")
		}
		b.WriteString("\n")
	}
	if len(envs) == 0 {
		return "no environments"
	}
	return strings.TrimRight(b.String(), "\n")
}
