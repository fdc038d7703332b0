package daemon

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The shipped unit bounds the daemon's and its jails' processes below
// the host's pids, so that the default maxima (max_sessions ×
// limits.max.pids alone is 32768, Debian's pid_max) cannot leave the
// host unable to fork: the start-up warning stays silent under it.
func TestServiceTasksMax(t *testing.T) {
	s := unitSettings(t, serviceFile, "Service")
	require.Len(t, s["TasksMax"], 1, "agentjail.service sets TasksMax=")
	pct, ok := strings.CutSuffix(s["TasksMax"][0], "%")
	require.True(t, ok, "a share of the host's pids, whatever its pid_max: %s", s["TasksMax"][0])
	p, err := strconv.ParseFloat(pct, 64)
	require.NoError(t, err)
	cfg := DefaultConfig()
	cfg.Admission.MaxConcurrent = 64
	for _, pidMax := range []int64{32768, 4194304, HostPidMax()} {
		tasksMax := int64(float64(pidMax) * p / 100)
		assert.Empty(t, PidsWarning(cfg, pidMax, tasksMax), "pid_max %d, TasksMax=%s", pidMax, s["TasksMax"][0])
	}
	assert.NotEmpty(t, PidsWarning(cfg, 32768, 0), "without it, on Debian's pid_max")
}
