package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/daemon"
	"agentjail/daemon/harness"
	"agentjail/internal/systest"
	"agentjail/nsjail"
)

// `agentjail mcp` as its own process (this test binary re-executed, see
// TestMain), driven by the Go SDK's client or by hand (raw JSON-RPC
// lines), in both its modes: jails in its own process, or a daemon's.
// Every test gives its jails a uid range of their own, so that "no
// process left" counts this test's jails only.

func TestMCPUsage(t *testing.T) {
	for _, args := range [][]string{
		{"mcp", "extra"},
		{"mcp", "--bogus"},
		{"mcp", "--url", "https://node:8443"}, // no token
		{"mcp", "--url", "ftp://node:8443", "--token-file", "/dev/null"},
		{"mcp", "--url", "https://node:8443", "--socket", "/run/agentjail/agentjail.sock"},
		{"mcp", "--token-file", "/etc/agentjail/token"},
		{"mcp", "--url", "https://node:8443", "--config", "/etc/agentjail/config.toml"},
		{"mcp", "--socket", "/run/agentjail/agentjail.sock", "--config", "/etc/agentjail/config.toml"},
		{"mcp", "--config", filepath.Join(t.TempDir(), "missing.toml")},
	} {
		code, stdout, stderr := run(t, "", args...)
		assert.Equal(t, exitUsage, code, "%q: %s", args, stderr)
		assert.Empty(t, stdout, "%q: nothing on the protocol stream", args)
		assert.NotEmpty(t, stderr, "%q must say what is wrong", args)
	}
	code, stdout, _ := run(t, "", "mcp", "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "run_python")
}

func TestMCPTextCutsLongOutput(t *testing.T) {
	long := strings.Repeat("é", 20_000) // 40000 bytes, two a rune: cuts must fall between runes
	res := &daemon.Result{Status: "error", ExitCode: 1, Stdout: "start" + long + "end", Stderr: "Traceback …\nValueError: x\n",
		Exception: &harness.Exception{Type: "ValueError", Message: "x", Line: 3}, Feedback: []string{"Fix it."}}
	text := resultText(res, nil, nil)
	assert.Contains(t, text, "agentjail: exit 1 · wall")
	assert.Contains(t, text, "--- stdout (40008 bytes; ")
	assert.Contains(t, text, "start")
	assert.Contains(t, text, "end\n", "the end of the output is kept")
	assert.Contains(t, text, "bytes cut …]")
	assert.Contains(t, text, "--- stderr ---\nTraceback …\nValueError: x\n")
	assert.Contains(t, text, "exception: ValueError: x (line 3)")
	assert.Contains(t, text, "feedback:\n- Fix it.")
	assert.Less(t, len(text), textStdoutBytes+textStderrBytes)
	for _, l := range strings.Split(text, "\n") {
		assert.True(t, strings.ToValidUTF8(l, "?") == l, "a cut split a rune: %q", l)
	}
}

// mcpConfig writes a configuration for jails run inside `agentjail mcp`:
// this test's own uids, two jails at once, requests of at most 1 MiB.
func mcpConfig(t *testing.T) (path string, base uint32) {
	t.Helper()
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	// As startDaemon: on cgroup v2 this moves the test into a leaf first.
	_, err := nsjail.NewRunner()
	require.NoError(t, err)
	base = 3_200_000_000 + uint32(rand.IntN(1000))*100_000
	path = filepath.Join(t.TempDir(), "config.toml")
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil,
		"[admission]\nmax_concurrent = 2\nmax_request_bytes = 1048576\n[jail]\nuid_base = %d\nuid_count = 100000\n", base), 0o644))
	return path, base
}

// mcpProc is `agentjail mcp` as a process.
func mcpCommand(args ...string) (*exec.Cmd, *systest.Buffer) {
	cmd := exec.Command("/proc/self/exe", append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), "AGENTJAIL_TEST_MAIN=1")
	log := &systest.Buffer{}
	cmd.Stderr = log
	return cmd, log
}

// connectMCP starts `agentjail mcp args...` and connects the Go SDK's
// client to it.
func connectMCP(t *testing.T, args ...string) (*mcp.ClientSession, *exec.Cmd, *systest.Buffer) {
	t.Helper()
	cmd, log := mcpCommand(args...)
	client := mcp.NewClient(&mcp.Implementation{Name: "agentjail-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd, TerminateDuration: 20 * time.Second}, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.Close()
		if t.Failed() {
			t.Logf("agentjail mcp's log:\n%s", log.String())
		}
	})
	return cs, cmd, log
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, map[string]any, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "%s", name)
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	var out map[string]any
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &out))
	}
	return res, out, strings.Join(text, "\n")
}

// noLeftovers checks that no process of the uid range and no jail cgroup
// of this test's jails is left.
func noLeftovers(t *testing.T, base uint32, logs ...string) {
	t.Helper()
	assert.Eventually(t, func() bool { return len(systest.ProcessesInRange(base, 100_000)) == 0 }, 5*time.Second, 20*time.Millisecond,
		"processes of the jails outlived agentjail mcp: %v", systest.ProcessesInRange(base, 100_000))
	assert.Empty(t, ownGroups(t, base, logs...), "jail cgroups outlived agentjail mcp")
}

// ownGroups are the jail cgroups (jailGroups) of this test's jails: those
// that hold a process of its uid range, or whose name (the run's or the
// session's id) is in one of logs. go test runs packages at once, and
// their daemons' jails have groups beside these: they are not this
// test's to judge.
func ownGroups(t *testing.T, base uint32, logs ...string) map[string][]string {
	t.Helper()
	ours := map[string]bool{}
	for _, pid := range systest.ProcessesInRange(base, 100_000) {
		ours[strconv.Itoa(pid)] = true
	}
	own := map[string][]string{}
	for name, procs := range jailGroups(t) {
		mine := slices.ContainsFunc(logs, func(l string) bool { return strings.Contains(l, name) })
		for _, p := range procs {
			mine = mine || ours[p]
		}
		if mine {
			own[name] = procs
		}
	}
	return own
}

// exited waits for the process to end on its own (the client closed
// stdin), and says how it ended.
func exited(t *testing.T, cmd *exec.Cmd, within time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool { return cmd.ProcessState != nil }, within, 10*time.Millisecond, "agentjail mcp did not exit")
	assert.Equal(t, 0, cmd.ProcessState.ExitCode(), "exit status: %v", cmd.ProcessState)
}

func TestMCPLocal(t *testing.T) {
	config, base := mcpConfig(t)
	cs, cmd, log := connectMCP(t, "--config", config)

	tools, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		assert.NotEmpty(t, tool.Description, tool.Name)
	}
	assert.ElementsMatch(t, []string{"run_python", "run_command", "session_start", "session_run", "session_end", "list_environments"}, names)

	res, out, text := callTool(t, cs, "run_python", map[string]any{"code": "print('hello')"})
	assert.False(t, res.IsError, text)
	assert.Regexp(t, `^agentjail: exit 0 · wall `+dur+` · cpu `, text, "the summary line of agentjail run first")
	assert.Contains(t, text, "--- stdout ---\nhello")
	assert.Equal(t, "ok", out["status"])

	res, out, text = callTool(t, cs, "run_python", map[string]any{"code": "x = 1\n1/0\n"})
	assert.False(t, res.IsError, "a program that raises is a normal answer: %s", text)
	assert.Equal(t, "error", out["status"])
	assert.Contains(t, text, "exception: ZeroDivisionError: division by zero (line 2)")
	assert.Contains(t, text, "feedback:\n- ")

	res, out, text = callTool(t, cs, "run_python", map[string]any{"code": "b = bytearray(512 << 20)", "limits": map[string]any{"memory_bytes": 48 << 20}})
	assert.False(t, res.IsError, text)
	assert.Equal(t, "memory_limit", out["kill_reason"])
	assert.Contains(t, text, "killed (memory_limit)")

	// The daemon's own refusals, in the tools' names: the jail could not
	// run it.
	res, _, text = callTool(t, cs, "run_python", map[string]any{"code": "pass", "limits": map[string]any{"memory_bytes": 1 << 20}})
	assert.True(t, res.IsError)
	assert.Contains(t, text, "limits.memory_bytes")
	res, _, text = callTool(t, cs, "run_python", map[string]any{"code": "pass", "limits": map[string]any{"memory_bytes": 8 << 30}})
	assert.True(t, res.IsError, "over the configuration's maximum")
	assert.Contains(t, text, "limits.memory_bytes")
	res, _, text = callTool(t, cs, "run_python", map[string]any{"code": strings.Repeat("#", 2<<20)})
	assert.True(t, res.IsError, "over max_request_bytes")
	assert.Contains(t, text, "413")
	res, _, text = callTool(t, cs, "run_python", map[string]any{"code": 5})
	assert.True(t, res.IsError, "a wrong type")
	assert.Contains(t, text, "code")
	res, _, text = callTool(t, cs, "run_python", map[string]any{"code": "pass", "tests": map[string]any{"function": "f", "cases": "no"}})
	assert.True(t, res.IsError, "bad tests")
	assert.Contains(t, text, "cases")
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_ruby", Arguments: map[string]any{}})
	assert.ErrorContains(t, err, "unknown tool")

	// A session across three calls; another id is not this server's.
	res, out, text = callTool(t, cs, "session_start", map[string]any{"limits": map[string]any{"memory_bytes": 128 << 20}})
	require.False(t, res.IsError, text)
	id, _ := out["id"].(string)
	require.True(t, strings.HasPrefix(id, "s-"), "%v", out)
	assert.Contains(t, text, "cpu 5m0s for all calls", "a session's CPU budget: limits.max.cpu_time_ms, as in a daemon")
	for _, code := range []string{"x = 40", "x += 2"} {
		res, _, text = callTool(t, cs, "session_run", map[string]any{"session_id": id, "code": code})
		require.False(t, res.IsError, text)
	}
	_, out, text = callTool(t, cs, "session_run", map[string]any{"session_id": id, "code": "x"})
	assert.Equal(t, "42", out["value"])
	assert.Contains(t, text, "value: 42")
	assert.Contains(t, text, "· session "+id+": call 3, alive")
	res, _, text = callTool(t, cs, "session_run", map[string]any{"session_id": "s-01NOTMINE", "code": "x"})
	assert.True(t, res.IsError)
	assert.Contains(t, text, "alive: "+id)
	res, out, text = callTool(t, cs, "list_environments", nil)
	assert.False(t, res.IsError, text)
	assert.Contains(t, text, "default: Python 3.")
	assert.NotEmpty(t, out["environments"])

	// The client goes: the session ends, the server exits, nothing stays.
	require.NotEmpty(t, systest.ProcessesInRange(base, 100_000), "the session's interpreter runs")
	require.NoError(t, cs.Close())
	exited(t, cmd, time.Second)
	noLeftovers(t, base, log.String())
	assert.NotContains(t, log.String(), "level=ERROR")
}

// rawMCP is `agentjail mcp` spoken to by hand, one JSON-RPC line at a
// time.
type rawMCP struct {
	cmd   *exec.Cmd
	log   *systest.Buffer
	in    io.WriteCloser
	out   *bufio.Reader
	done  chan struct{}
	state *os.ProcessState
}

func startRawMCP(t *testing.T, args ...string) *rawMCP {
	t.Helper()
	cmd, log := mcpCommand(args...)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	// Not StdoutPipe: Wait, on its own goroutine below, closes that pipe
	// once the process has exited, and a test's read of what it wrote
	// last would race with the close ("file already closed").
	out, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { out.Close() })
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	require.NoError(t, err)
	m := &rawMCP{cmd: cmd, log: log, in: in, out: bufio.NewReader(out), done: make(chan struct{})}
	go func() { _ = cmd.Wait(); m.state = cmd.ProcessState; close(m.done) }()
	t.Cleanup(func() {
		select {
		case <-m.done:
		default:
			_ = cmd.Process.Kill()
			<-m.done
		}
		if t.Failed() {
			t.Logf("agentjail mcp's log:\n%s", log.String())
		}
	})
	m.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	assert.Contains(t, m.recv(t), `"serverInfo":{"name":"agentjail"`)
	m.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return m
}

func (m *rawMCP) send(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(m.in, line+"\n")
	require.NoError(t, err)
}

func (m *rawMCP) recv(t *testing.T) string {
	t.Helper()
	line, err := m.out.ReadString('\n')
	require.NoError(t, err)
	return line
}

// wait waits for the process's end and returns its exit status.
func (m *rawMCP) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-m.done:
		return m.state.ExitCode()
	case <-time.After(within):
		t.Fatalf("agentjail mcp did not exit within %s", within)
	}
	return -1
}

func callLine(id int, tool string, args map[string]any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	return string(b)
}

// startedSession starts a session by hand and returns its id.
func (m *rawMCP) startedSession(t *testing.T, id int) string {
	t.Helper()
	m.send(t, callLine(id, "session_start", map[string]any{}))
	var ans struct {
		Result struct {
			StructuredContent struct{ ID string } `json:"structuredContent"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(m.recv(t)), &ans))
	require.NotEmpty(t, ans.Result.StructuredContent.ID)
	return ans.Result.StructuredContent.ID
}

// busy waits until at least n processes of the range run.
func busy(t *testing.T, base uint32, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return len(systest.ProcessesInRange(base, 100_000)) >= n }, 10*time.Second, 10*time.Millisecond)
}

func TestMCPClientGoesMidCall(t *testing.T) {
	config, base := mcpConfig(t)
	m := startRawMCP(t, "--config", config)
	m.startedSession(t, 2)
	before := len(systest.ProcessesInRange(base, 100_000))
	m.send(t, callLine(3, "run_python", map[string]any{"code": "while True: pass", "limits": map[string]any{"wall_time_ms": 120_000, "cpu_time_ms": 120_000}}))
	busy(t, base, before+1)
	require.NoError(t, m.in.Close()) // the client goes, its call running
	assert.Equal(t, 0, m.wait(t, 5*time.Second))
	noLeftovers(t, base, m.log.String())
}

func TestMCPStopsAtSIGTERM(t *testing.T) {
	config, base := mcpConfig(t)
	m := startRawMCP(t, "--config", config)
	id := m.startedSession(t, 2)
	m.send(t, callLine(3, "session_run", map[string]any{"session_id": id, "code": "import time\nwhile True: time.sleep(1)", "limits": map[string]any{"wall_time_ms": 120_000}}))
	time.Sleep(300 * time.Millisecond) // the call runs
	require.NoError(t, m.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, m.wait(t, 5*time.Second))
	noLeftovers(t, base, m.log.String())
	assert.Contains(t, m.log.String(), "why=signal")
}

func TestMCPLineOverTheLimit(t *testing.T) {
	config, base := mcpConfig(t)
	m := startRawMCP(t, "--config", config)
	m.startedSession(t, 2)
	// One message past the SDK's cap on a line (16 MiB): the connection
	// ends with an error, and everything with it.
	go func() {
		_, _ = io.WriteString(m.in, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"`+strings.Repeat("#", 17<<20))
	}()
	assert.Equal(t, 1, m.wait(t, 10*time.Second))
	assert.Contains(t, m.log.String(), "level=ERROR")
	noLeftovers(t, base, m.log.String())
}

func TestMCPThroughDaemon(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	base := 3_200_000_000 + uint32(rand.IntN(1000))*100_000
	d := startDaemon(t, t.TempDir(), fmt.Sprintf("[peers]\nuids = [0]\n[admission]\nmax_concurrent = 2\n[jail]\nuid_base = %d\nuid_count = 100000\n", base))
	cs, cmd, _ := connectMCP(t, "--socket", d.sock)
	res, out, text := callTool(t, cs, "run_python", map[string]any{"code": "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"})
	assert.False(t, res.IsError, text)
	assert.Equal(t, float64(3), out["exit_code"])
	assert.Contains(t, text, "--- stdout ---\nout\n--- stderr ---\nerr")
	res, out, text = callTool(t, cs, "session_start", nil)
	require.False(t, res.IsError, text)
	id := out["id"].(string)
	_, out, _ = callTool(t, cs, "session_run", map[string]any{"session_id": id, "code": "y = 7\ny * 6"})
	assert.Equal(t, "42", out["value"])
	// The client goes: the session it started ends with it.
	require.NoError(t, cs.Close())
	exited(t, cmd, 5*time.Second)
	status, b, err := remoteDo(context.Background(), d.sock, "GET", "/v1/sessions/"+id, nil)
	require.NoError(t, err)
	assert.Equal(t, 410, status, "the session ended: %s", b)
	assert.Contains(t, string(b), "deleted")
	noLeftoversOf(t, base, d.log.String())

	// A client that goes mid-call: the daemon ends the jail ("cancelled").
	m := startRawMCP(t, "--socket", d.sock)
	m.send(t, callLine(2, "run_python", map[string]any{"code": "print('spinning', flush=True)\nwhile True: pass", "limits": map[string]any{"wall_time_ms": 120_000, "cpu_time_ms": 120_000}}))
	require.Eventually(t, func() bool {
		_, b, err := remoteDo(context.Background(), d.sock, "GET", "/v1/health", nil)
		return err == nil && strings.Contains(string(b), `"running":1`)
	}, 10*time.Second, 10*time.Millisecond, "the run started")
	require.NoError(t, m.in.Close())
	assert.Equal(t, 0, m.wait(t, 5*time.Second))
	cancelled := regexp.MustCompile(`msg=run id=(j-\S+) status=killed .*kill_reason=cancelled`)
	require.Eventually(t, func() bool { return cancelled.MatchString(d.log.String()) }, 5*time.Second, 10*time.Millisecond,
		"the daemon ended the run as cancelled")
	assert.NotContains(t, jailGroups(t), cancelled.FindStringSubmatch(d.log.String())[1], "the run's cgroup outlived it")

	// SIGTERM: the session it started ends with it.
	m = startRawMCP(t, "--socket", d.sock)
	id = m.startedSession(t, 2)
	require.NoError(t, m.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, m.wait(t, 5*time.Second))
	status, b, err = remoteDo(context.Background(), d.sock, "GET", "/v1/sessions/"+id, nil)
	require.NoError(t, err)
	assert.Equal(t, 410, status, "the session ended at SIGTERM: %s", b)
	noLeftoversOf(t, base, d.log.String())

	// No daemon there: a tool error that says what to do.
	cs2, _, _ := connectMCP(t, "--socket", filepath.Join(t.TempDir(), "none.sock"))
	res, _, text = callTool(t, cs2, "run_python", map[string]any{"code": "pass"})
	assert.True(t, res.IsError)
	assert.Contains(t, text, "is `agentjail serve` running?")
}

// noLeftoversOf checks the session's processes are gone while the daemon
// still runs (its zygote and jails kept ahead stay: they are the
// daemon's).
func noLeftoversOf(t *testing.T, base uint32, logs ...string) {
	t.Helper()
	for name := range ownGroups(t, base, logs...) {
		assert.False(t, strings.HasPrefix(name, "s-"), "a session's cgroup %s outlived its end", name)
	}
}

func TestMCPCleansUpAfterAKilledOne(t *testing.T) {
	config, base := mcpConfig(t)
	m := startRawMCP(t, "--config", config)
	id := m.startedSession(t, 2)
	require.Contains(t, jailGroups(t), id)
	require.NoError(t, m.cmd.Process.Kill()) // no clean-up of its own
	m.wait(t, 5*time.Second)
	// Its jails die with it (their parent-death signal); the next
	// agentjail mcp removes their cgroups.
	m2 := startRawMCP(t, "--config", config)
	m2.send(t, callLine(2, "list_environments", map[string]any{})) // answered once its daemon is up
	m2.recv(t)
	assert.NotContains(t, jailGroups(t), id, "the killed one's session cgroup")
	assert.Contains(t, m2.log.String(), "removed a jail left by a process that died")
	require.NoError(t, m2.in.Close())
	assert.Equal(t, 0, m2.wait(t, 5*time.Second))
	noLeftovers(t, base, m.log.String(), m2.log.String())
}

func TestMCPCancelledCall(t *testing.T) {
	config, base := mcpConfig(t)
	m := startRawMCP(t, "--config", config)
	m.send(t, callLine(2, "list_environments", map[string]any{})) // its daemon is up
	m.recv(t)
	// The call asks for progress, so that the program's first line comes
	// back before the end: only then is the run known to be running (a
	// count of the range's processes also counts the zygote and the runs
	// it forks ahead, which may start meanwhile).
	call, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": map[string]any{
		"name": "run_python", "_meta": map[string]any{"progressToken": "p3"},
		"arguments": map[string]any{"code": "print('spinning', flush=True)\nwhile True: pass", "limits": map[string]any{"wall_time_ms": 120_000, "cpu_time_ms": 120_000}}}})
	require.NoError(t, err)
	m.send(t, string(call))
	for line := m.recv(t); !strings.Contains(line, "notifications/progress"); line = m.recv(t) {
	}
	m.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"the user changed their mind"}}`)
	cancelled := regexp.MustCompile(`msg=run id=(j-\S+) status=killed .*kill_reason=cancelled`)
	require.Eventually(t, func() bool { return cancelled.MatchString(m.log.String()) }, 5*time.Second, 10*time.Millisecond,
		"the jail ended as cancelled")
	assert.NotContains(t, jailGroups(t), cancelled.FindStringSubmatch(m.log.String())[1])
	// The server goes on.
	m.send(t, callLine(4, "run_python", map[string]any{"code": "print('still here')"}))
	line := m.recv(t)
	if strings.Contains(line, `"id":3,`) { // the SDK answers the cancelled call too
		line = m.recv(t)
	}
	assert.Contains(t, line, `still here`)
	require.NoError(t, m.in.Close())
	assert.Equal(t, 0, m.wait(t, 5*time.Second))
	noLeftovers(t, base, m.log.String())
}

// TestMCPSchemasDescribeEverything walks the tools' schemas: every
// property has a description (what a model reads) and says its type
// (a type, or anyOf branches of one type each: the spelling portable to
// single-type dialects, which the MCP inspector's --strict check asks).
func TestMCPSchemasDescribeEverything(t *testing.T) {
	for _, daemonMode := range []bool{false, true} {
		cfg := daemon.DefaultConfig()
		schemas := map[string]*jsonschema.Schema{
			"run_python": runPythonSchema(cfg, daemonMode), "run_command": runCommandSchema(cfg, daemonMode), "session_start": sessionStartSchema(cfg, daemonMode),
			"session_run": sessionRunSchema(cfg, daemonMode), "session_end": sessionEndSchema(),
			"run_python output": resultSchema(false), "session_run output": resultSchema(true),
		}
		for name, s := range schemas {
			checkSchema(t, name, s, true)
		}
		lim := runPythonSchema(cfg, daemonMode).Properties["limits"].Properties
		assert.Len(t, lim, len(allLimitKeys()))
		assert.Contains(t, lim["memory_bytes"].Description, "Default 268435456 (256MiB)")
		assert.Contains(t, lim["memory_bytes"].Description, "at most 4294967296 (4GiB).")
		assert.Equal(t, daemonMode, strings.Contains(lim["memory_bytes"].Description, "The daemon's configuration may"), lim["memory_bytes"].Description)
		assert.Contains(t, lim["wall_time_ms"].Description, "in milliseconds. Default 10000 (10s)")
	}
}

func checkSchema(t *testing.T, path string, s *jsonschema.Schema, top bool) {
	t.Helper()
	if !top {
		assert.NotEmpty(t, s.Description, "%s: a description", path)
	}
	typed := s.Type != ""
	if len(s.AnyOf) > 0 {
		typed = true
		for _, b := range s.AnyOf {
			assert.NotEmpty(t, b.Type, "%s: an anyOf branch of one type", path)
		}
	}
	assert.True(t, typed, "%s: a type", path)
	assert.Empty(t, s.Types, "%s: a list of types is less portable than anyOf", path)
	for name, p := range s.Properties {
		checkSchema(t, path+"."+name, p, false)
	}
	if s.Items != nil {
		checkSchema(t, path+"[]", s.Items, s.Items.Description == "")
	}
}

func TestMCPLocalFailureSaysWhatToDo(t *testing.T) {
	b := &localBackend{ready: make(chan struct{}), err: errors.New("running jails needs root (to map a dedicated host uid per jail)")}
	close(b.ready)
	_, _, err := b.do(context.Background(), "GET", "/v1/environments", nil)
	assert.ErrorContains(t, err, "running jails needs root")
	assert.ErrorContains(t, err, "--socket PATH or AGENTJAIL_SOCKET")
}
