package daemon

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
