package nsjail

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A call leaves a thread spinning and returns: between calls the session
// holds no run slot, and must not compete with the runs for CPU. Its CPU
// time may grow by the idle sliver only (cgroup.IdleQuotaUS per
// IdlePeriodUS), where before it grew by a whole CPU.
func TestIdleSessionDoesNotRun(t *testing.T) {
	s := startSession(t, nil)
	r := sessionCall(t, s, "import threading\ndef spin():\n    while True: pass\nthreading.Thread(target=spin, daemon=True).start()", nil)
	require.Equal(t, StatusOK, r.Status, "%s", r.Stderr)
	time.Sleep(200 * time.Millisecond) // the cut is in force by now
	before := s.Stats().CPUTime
	time.Sleep(2 * time.Second)
	grew := s.Stats().CPUTime - before
	assert.Less(t, grew, 100*time.Millisecond, "CPU time of an idle session with a spinning thread, in 2 s")

	// The next call runs at full speed, the thread too, and the session
	// answers as before.
	r = sessionCall(t, s, "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\nthreading.active_count()", nil)
	require.Equal(t, StatusOK, r.Status, "%s", r.Stderr)
	assert.Less(t, r.WallTime, 20*time.Second, "0.3 s of CPU (shared with the thread, on a loaded host): throttled, it would take 300 s")
	assert.GreaterOrEqual(t, r.CPUTime, 300*time.Millisecond)
	assert.Equal(t, EndReason(""), r.Ended)

	// An idle session ends at once when ended.
	t0 := time.Now()
	s.End(EndDeleted)
	require.NoError(t, s.Wait())
	assert.Less(t, time.Since(t0), 2*time.Second)
}
