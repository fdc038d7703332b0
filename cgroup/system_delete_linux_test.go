package cgroup

// Ending groups: kill, delete with live processes, a failed delete, and
// the removal of stale groups.

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"agentjail/internal/systest"
)

func TestSystemKill(t *testing.T) {
	m := requireSystem(t, needManager)
	g := create(t, m, "kill", Resources{Pids: 16})
	c := shChild(t, "sleep 1000 & sleep 1000 & exec sleep 1000")
	require.NoError(t, g.Attach(c.pid()))
	c.release()
	require.Eventually(t, func() bool { return len(procsOf(t, g.dirs[0])) == 3 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, g.Kill())
	ws := c.wait(5 * time.Second)
	assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "%v", ws)
	require.Eventually(t, func() bool { return len(procsOf(t, g.dirs[0])) == 0 }, 2*time.Second, time.Millisecond)
	for _, d := range g.dirs {
		assert.Empty(t, procsOf(t, d))
	}
}

func TestSystemDeleteWithLiveProcesses(t *testing.T) {
	m := requireSystem(t, needManager)
	g, err := m.Create("live", Resources{MemoryBytes: 64 << 20, Pids: 16, CPUs: 1})
	require.NoError(t, err)
	t.Cleanup(func() { g.Delete() })
	c := shChild(t, "sleep 1000 & exec sleep 1000")
	require.NoError(t, g.Attach(c.pid()))
	c.release()
	require.Eventually(t, func() bool { return len(procsOf(t, g.dirs[0])) == 2 }, 5*time.Second, 5*time.Millisecond)
	_, err = g.CPUTime() // leaves an fd open, which Delete must close
	require.NoError(t, err)
	_, err = g.OOMEvents()
	require.NoError(t, err)

	start := time.Now()
	require.NoError(t, g.Delete())
	t.Logf("Delete with 2 live processes: %v", time.Since(start))
	assertGone(t, g.dirs)
	ws := c.wait(5 * time.Second)
	assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "%v", ws)

	assert.NoError(t, g.Delete(), "idempotent")
	_, err = g.Stats()
	assert.ErrorIs(t, err, ErrDeleted)
	_, err = g.CPUTime()
	assert.ErrorIs(t, err, ErrDeleted)
	assert.ErrorIs(t, g.Attach(os.Getpid()), ErrDeleted)
}

// A Delete that fails (here: a child directory the group cannot lose, so
// rmdir says EBUSY until the deadline) closes every descriptor the group
// held and drops its live mark: a caller that gives up on the group leaks
// no fd, and the start-up sweep (Stale) finds what is left.
func TestSystemDeleteFailureLeaksNoFd(t *testing.T) {
	m := requireSystem(t, needManager)
	before := systest.FdCount()
	g, err := m.Create("undeletable", Resources{MemoryBytes: 64 << 20, Pids: 8})
	require.NoError(t, err)
	_, err = g.CPUTime()
	require.NoError(t, err)
	_, err = g.OOMEvents()
	require.NoError(t, err)
	sub := filepath.Join(g.dirs[0], "child")
	require.NoError(t, os.Mkdir(sub, 0o755))
	t.Cleanup(func() { unix.Rmdir(sub); m.Remove("undeletable") })
	require.Greater(t, systest.FdCount(), before, "the group holds descriptors")

	err = g.Delete()
	require.Error(t, err)
	t.Logf("expected error: %v", err)
	assert.Equal(t, before, systest.FdCount(), "descriptors left open by a failed Delete")
	names, err := m.Stale()
	require.NoError(t, err)
	assert.Equal(t, []string{"undeletable"}, names, "the group is no longer marked live")

	// The retry the doc promises still works.
	require.NoError(t, unix.Rmdir(sub))
	require.NoError(t, g.Delete())
	assertGone(t, g.dirs)
}

func TestSystemStaleRemove(t *testing.T) {
	m := requireSystem(t, needManager)

	// A live group (ours) is not stale, and Remove refuses it.
	live := create(t, m, "live", Resources{})
	names, err := m.Stale()
	require.NoError(t, err)
	assert.NotContains(t, names, "live")
	assert.ErrorIs(t, m.Remove("live"), ErrGroupBusy)
	for _, d := range live.dirs {
		assert.DirExists(t, d)
	}

	// Another process whose memory cgroup differs but which shares the
	// other hierarchies (this CI machine: pids, cpu, cpuacct at "/") sees
	// our group in those only: it is not stale for it either.
	if m.Version() == V1 && len(m.ctrls) > 1 {
		other := *m
		other.ctrls = slices.Clone(m.ctrls)
		other.ctrls[0].base = m.ctrls[0].base + "-other"
		require.NoError(t, os.Mkdir(other.ctrls[0].base, 0o755))
		t.Cleanup(func() { unix.Rmdir(other.ctrls[0].base) })
		names, err := other.Stale()
		require.NoError(t, err)
		assert.NotContains(t, names, "live", "a live group of another process")
		assert.ErrorIs(t, other.Remove("live"), ErrGroupBusy)
		for _, d := range live.dirs {
			assert.DirExists(t, d)
		}
	}

	// A crashed process: its group stays, with a process still inside,
	// and its flock is gone (the kernel drops it with the process; here
	// we close the fd).
	g, err := m.Create("crashed", Resources{MemoryBytes: 64 << 20, Pids: 8})
	require.NoError(t, err)
	c := shChild(t, "exec sleep 1000")
	require.NoError(t, g.Attach(c.pid()))
	unlockDirs(g.lockFDs) // what the kernel does when a process dies
	g.lockFDs = nil

	names, err = m.Stale()
	require.NoError(t, err)
	assert.Equal(t, []string{"crashed"}, names)
	require.NoError(t, m.Remove("crashed"))
	assertGone(t, g.dirs)
	ws := c.wait(5 * time.Second)
	assert.True(t, ws.Signaled(), "%v", ws)

	// A partial leftover: the group only exists in some hierarchies.
	dirs := m.groupDirs("partial")
	require.NoError(t, os.Mkdir(dirs[len(dirs)-1], 0o755))
	names, err = m.Stale()
	require.NoError(t, err)
	assert.Equal(t, []string{"partial"}, names)
	require.NoError(t, m.Remove("partial"))
	assertGone(t, dirs)

	assert.NoError(t, m.Remove("never-existed"))
	assert.ErrorIs(t, m.Remove("../x"), ErrInvalidName)
	names, err = m.Stale()
	require.NoError(t, err)
	assert.Empty(t, names)
}
