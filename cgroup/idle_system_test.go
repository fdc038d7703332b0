//go:build linux

package cgroup

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An idle group's CPU bandwidth is cut to IdleQuotaUS per IdlePeriodUS,
// and every path that kills the group lifts the cut first (unthrottle),
// so that its killed processes exit at once (before Linux 6.18 a
// throttled task exits within its quota): the start-up sweep's Remove of
// a group a dead daemon left idle, and Delete of one killed while idle.
func TestSystemIdleCutIsLiftedToKill(t *testing.T) {
	m := requireSystem(t, needManager)
	g := create(t, m, "idle", Resources{Pids: 8, CPUs: 1})
	c := shChild(t, "while :; do :; done")
	require.NoError(t, g.Attach(c.pid()))
	c.release()
	quota := func() string {
		dir := m.ctrlDir("cpu", "idle")
		if m.version == V2 {
			return readTrim(t, filepath.Join(dir, "cpu.max"))
		}
		return readTrim(t, filepath.Join(dir, "cpu.cfs_quota_us")) + " " + readTrim(t, filepath.Join(dir, "cpu.cfs_period_us"))
	}
	require.NoError(t, g.SetIdle(true))
	assert.Equal(t, "1000 100000", quota(), "the sliver: 1 ms per 100 ms")
	m.unthrottle("idle")
	assert.True(t, strings.HasPrefix(quota(), "max") || strings.HasPrefix(quota(), "-1"), "lifted: %s", quota())

	require.NoError(t, g.SetIdle(true))
	start := time.Now()
	require.NoError(t, g.Delete())
	c.wait(5 * time.Second)
	t.Logf("deleted an idle group with a spinning process in %v", time.Since(start))
}
