package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"agentjail/internal/systest"
	"agentjail/seccomp"
)

// A forbidden system call in errno mode fails with EPERM and the program
// goes on: the summary line says which calls, in both modes (issue 31
// item 7).
func TestSummaryShowsForbiddenCalls(t *testing.T) {
	jailHost(t)
	systest.Require(t, systest.Seccomp)
	d := startDaemon(t, t.TempDir(), "[peers]\nuids = [0]\n")
	prog := `import os, socket
for _ in range(2):
    try:
        socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9)  # NETLINK_AUDIT
    except PermissionError:
        pass
os.sync()
`
	for _, mode := range [][]string{nil, {"--socket", d.sock}} {
		code, _, stderr := bin(t, "", append(append([]string{"run"}, mode...), "-c", prog)...)
		assert.Equal(t, 0, code, stderr)
		assert.Regexp(t, `(?m)^agentjail: exit 0 · wall .* · forbidden: socket\(AF_NETLINK, NETLINK_AUDIT\) ×2, sync\n\z`, stderr, "%v", mode)
	}
	code, _, stderr := bin(t, "", "run", "-c", "print(1)")
	assert.Equal(t, 0, code)
	assert.NotContains(t, stderr, "forbidden")
}

func TestForbiddenSummary(t *testing.T) {
	assert.Empty(t, forbiddenSummary(nil))
	r := &seccomp.Report{Calls: []seccomp.CallCount{
		{Syscall: "socket", Number: 41, Count: 2, Detail: "AF_INET, SOCK_RAW"}, {Syscall: "sync", Number: 162, Count: 1},
		{ABI: "i386", Number: 11, Count: 3}, {Number: 999, Count: 1}, {Syscall: "ptrace", Number: 101, Count: 1},
	}}
	assert.Equal(t, "forbidden: socket(AF_INET, SOCK_RAW) ×2, sync, i386 #11 ×3, 2 more", forbiddenSummary(r))
	r.Calls = r.Calls[3:4]
	assert.Equal(t, "forbidden: #999", forbiddenSummary(r))
}
