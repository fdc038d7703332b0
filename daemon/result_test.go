package daemon

import (
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/nsjail"
	"agentjail/seccomp"
)

// The names and shapes of docs/contract.md §3 are fixed: a rename fails here.
func TestResultJSONShape(t *testing.T) {
	r := &nsjail.Result{ID: "j-1", Status: nsjail.StatusKilled, ExitCode: 137, Signal: syscall.SIGKILL, KillReason: nsjail.KillMemoryLimit,
		Stdout: []byte("45\n"), WallTime: 31200 * time.Microsecond, CPUTime: 18400 * time.Microsecond,
		PeakMemoryBytes: 9539584, PeakMemorySource: "memory.peak", MemoryLimitBytes: 268435456, PidsPeak: -1,
		Seccomp: &seccomp.Report{Syscall: "ptrace", Number: 101, Calls: []seccomp.CallCount{{Syscall: "ptrace", Number: 101, Count: 2}}}}
	b, err := json.Marshal(fromJail(r))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	for _, k := range []string{"id", "status", "exit_code", "signal", "kill_reason", "seccomp", "stdout", "stderr", "stdout_truncated",
		"stderr_truncated", "wall_time_ms", "cpu_time_ms", "peak_memory_bytes", "memory_limit_bytes", "exception", "tests", "feedback", "files"} {
		assert.Contains(t, m, k)
	}
	assert.Equal(t, "killed", m["status"])
	assert.Equal(t, "SIGKILL", m["signal"])
	assert.Equal(t, "memory_limit", m["kill_reason"])
	assert.Equal(t, 31.2, m["wall_time_ms"])
	assert.Equal(t, 18.4, m["cpu_time_ms"])
	assert.Equal(t, float64(9539584), m["peak_memory_bytes"])
	assert.Nil(t, m["pids_peak"], "unknown is null, not -1")
	assert.Equal(t, map[string]any{"syscall": "ptrace", "number": float64(101),
		"calls": []any{map[string]any{"syscall": "ptrace", "number": float64(101), "count": float64(2)}}}, m["seccomp"])
	assert.Equal(t, []any{}, m["files"])
	require.Len(t, m["feedback"], 2, "the kill, then the refused call")
	assert.Contains(t, m["feedback"].([]any)[0], "memory limit of 256.0 MiB")
	assert.Contains(t, m["feedback"].([]any)[1], "ptrace failed with EPERM")

	// Unknown peak is null; a clean run has no feedback and a null seccomp.
	ok := fromJail(&nsjail.Result{Status: nsjail.StatusOK, PeakMemoryBytes: -1, PidsPeak: 3})
	b, _ = json.Marshal(ok)
	require.NoError(t, json.Unmarshal(b, &m))
	assert.Nil(t, m["peak_memory_bytes"])
	assert.Nil(t, m["seccomp"])
	assert.Equal(t, []any{}, m["feedback"])
	assert.Equal(t, "", m["signal"])
}
