package daemon

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
	"agentjail/nsjail"
	"agentjail/seccomp"
)

// Issue 37: feedback is empty when the status is ok and every test passed
// (docs/contract.md §3.10), whatever the seccomp field says: a program
// that survived a refused call is not told to do without it. When the
// program failed, the sentence names the call with its arguments.
func TestFeedbackEmptyWhenOKWhateverSeccompSays(t *testing.T) {
	rep := &seccomp.Report{Syscall: "socket", Number: 41, Detail: "AF_NETLINK, NETLINK_AUDIT",
		Calls: []seccomp.CallCount{{Syscall: "socket", Number: 41, Count: 1, Detail: "AF_NETLINK, NETLINK_AUDIT"}}}
	j := &Job{}
	ok := j.result(&nsjail.Result{Status: nsjail.StatusOK, PeakMemoryBytes: -1, PidsPeak: -1, Seccomp: rep, PidsMaxHits: 2})
	assert.Equal(t, []string{}, ok.Feedback)
	assert.Equal(t, rep, ok.Seccomp, "the field still reports the call")

	failed := j.result(&nsjail.Result{Status: nsjail.StatusError, ExitCode: 1, PeakMemoryBytes: -1, PidsPeak: -1, Seccomp: rep})
	require.NotEmpty(t, failed.Feedback)
	assert.Contains(t, failed.Feedback, "The forbidden system call socket(AF_NETLINK, NETLINK_AUDIT) failed with EPERM (PermissionError); the sandbox does not allow it, so do without it.")
}

// The same through the daemon, in real jails: a program that survives a
// refused ptrace has an empty feedback unless a test failed, and
// getaddrinfo's netlink probe neither ends a kill-mode run nor is reported.
func TestFeedbackOfSurvivedCallsInRealJails(t *testing.T) {
	j := &recordingJailer{r: realRunner(t)}
	mounts := systest.MountCount()
	_, _, c := startServer(t, testOptions(), j)
	code := `import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
if libc.ptrace(16, 1, 0, 0) == -1: print(errno.errorcode[ctypes.get_errno()])
def add(a, b): return a + b
`
	res := runJSON(t, c, map[string]any{"code": code})
	assert.Equal(t, "ok", res.Status, res.Stderr)
	assert.Equal(t, "EPERM\n", res.Stdout)
	require.NotNil(t, res.Seccomp)
	assert.Equal(t, "ptrace", res.Seccomp.Syscall)
	assert.Equal(t, []string{}, res.Feedback)

	res = runJSON(t, c, map[string]any{"code": code, "tests": map[string]any{"function": "add",
		"cases": []map[string]any{{"args": []any{1, 2}, "expected": 3}}}})
	assert.Equal(t, "ok", res.Status, res.Stderr)
	require.NotNil(t, res.Tests)
	assert.True(t, res.Tests.AllPassed)
	assert.Equal(t, []string{}, res.Feedback)

	res = runJSON(t, c, map[string]any{"code": code, "tests": map[string]any{"function": "add",
		"cases": []map[string]any{{"args": []any{1, 2}, "expected": 4}}}})
	assert.Equal(t, "ok", res.Status, res.Stderr)
	assert.Contains(t, strings.Join(res.Feedback, " "), "The forbidden system call ptrace failed with EPERM")

	res = runJSON(t, c, map[string]any{"on_forbidden_syscall": "kill", "code": `import socket
print(socket.getaddrinfo("localhost", 80, 0, socket.SOCK_STREAM, 0, socket.AI_ADDRCONFIG)[0][4][0])`})
	assert.Equal(t, "ok", res.Status, res.Stderr)
	assert.Equal(t, "127.0.0.1\n", res.Stdout)
	assert.Nil(t, res.Seccomp)
	assert.Equal(t, []string{}, res.Feedback)
	j.noLeftovers(t, mounts)
}
