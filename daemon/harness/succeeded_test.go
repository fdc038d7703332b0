package harness

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"agentjail/nsjail"
	"agentjail/seccomp"
)

func TestSucceeded(t *testing.T) {
	assert.True(t, Succeeded("ok", nil))
	assert.True(t, Succeeded("ok", &TestsResult{Total: 2, Passed: 2, AllPassed: true}))
	assert.False(t, Succeeded("ok", &TestsResult{Total: 2, Passed: 1, Failed: 1}))
	assert.False(t, Succeeded("error", nil))
	assert.False(t, Succeeded("killed", nil))
}

// Issue 37: the sentence names the arguments the call was forbidden for.
func TestFeedbackNamesTheCallsArguments(t *testing.T) {
	rep := &seccomp.Report{Syscall: "socket", Number: 41, Detail: "AF_INET, SOCK_RAW",
		Calls: []seccomp.CallCount{{Syscall: "socket", Number: 41, Count: 1, Detail: "AF_INET, SOCK_RAW"}}}
	fb := JailFeedback(&nsjail.Result{Status: nsjail.StatusError, Seccomp: rep})
	assert.Equal(t, []string{"The forbidden system call socket(AF_INET, SOCK_RAW) failed with EPERM (PermissionError); the sandbox does not allow it, so do without it."}, fb)
	fb = JailFeedback(&nsjail.Result{Status: nsjail.StatusKilled, KillReason: nsjail.KillSeccomp, Seccomp: rep})
	assert.Contains(t, fb[0], "the forbidden system call socket(AF_INET, SOCK_RAW);")
}
