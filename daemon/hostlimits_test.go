package daemon

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// max_sessions × limits.max.pids can reach the host's pid_max (32768 on
// Debian): that is said, unless a pids limit of the daemon (a service's
// TasksMax=) keeps the jails below it.
func TestPidsWarning(t *testing.T) {
	c, err := parseConfig([]byte("[admission]\nmax_concurrent = 2\nmax_sessions = 32\n"))
	require.NoError(t, err)
	assert.Equal(t, int64(34*1025+2*3), c.MaxJailTasks(), "34 jails of 1024 + their init; a zygote and two runs ahead")
	w := PidsWarning(c, 32768, 0)
	assert.Contains(t, w, "may hold 34856 processes and threads")
	assert.Contains(t, w, "the daemon has no pids limit")
	assert.Contains(t, w, "Set TasksMax= on the service to at most 24576")
	assert.Contains(t, PidsWarning(c, 32768, 30000), "the daemon's pids limit (TasksMax=, pids.max) is 30000")
	assert.Empty(t, PidsWarning(c, 32768, 8192), "TasksMax=25%% of 32768")
	assert.Empty(t, PidsWarning(c, 4194304, 0), "a host with pid_max 2^22")
	assert.Empty(t, PidsWarning(c, 0, 0), "pid_max unknown")

	small, err := parseConfig([]byte("[admission]\nmax_concurrent = 2\nmax_sessions = 4\n[limits.max]\npids = 256\n"))
	require.NoError(t, err)
	assert.Empty(t, PidsWarning(small, 32768, 0))
}

func TestPidsLimitOf(t *testing.T) {
	root := t.TempDir()
	write := func(rel, v string) {
		require.NoError(t, os.MkdirAll(filepath.Join(root, rel), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, rel, "pids.max"), []byte(v+"\n"), 0o644))
	}
	write("pids", "max")
	write("pids/system.slice", "max")
	write("pids/system.slice/agentjail.service", "8192")
	write("pids/system.slice/agentjail.service/supervisor", "max")
	v1 := "12:pids:/system.slice/agentjail.service/supervisor\n4:memory:/x\n0::/\n"
	assert.Equal(t, int64(8192), pidsLimitOf(v1, root), "v1: the service's, above the daemon's own group")

	write("system.slice/agentjail.service", "4915")
	write("system.slice/agentjail.service/supervisor", "max")
	assert.Equal(t, int64(4915), pidsLimitOf("0::/system.slice/agentjail.service/supervisor\n", root), "v2")
	assert.Equal(t, int64(0), pidsLimitOf("0::/user.slice\n", root), "no limit")
	assert.Equal(t, int64(0), pidsLimitOf("", root))
}
