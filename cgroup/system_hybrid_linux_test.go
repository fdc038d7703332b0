package cgroup

// The v2 mechanics on a hybrid host's unified hierarchy, and the cost of a
// group's life (BenchmarkLifecycle).

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/cgroups/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestSystemV2MechanicsOnHybridUnified drives the v2 code on this hybrid
// host's unified mount, which has no memory/pids/cpu controller: the
// supervisor-leaf move, the busy-cgroup refusal, group creation, attach,
// cpu.stat, cgroup.kill, Delete, Stale and containerd's v2 delete are real;
// the limits are not. Our process moves in the unified hierarchy only (no
// controllers there) and is moved back to where it was afterwards.
func TestSystemV2MechanicsOnHybridUnified(t *testing.T) {
	requireSystem(t, needHybridUnified)
	mnt, origDir, x := hybridDelegated(t)
	refusesV2Busy(t, mnt, origDir, x)
	m := opensV2AsSupervisor(t, mnt, x)
	v2GroupLife(t, m)
	v2StaleRemove(t, m)
}

// hybridDelegated makes X, which plays the part of the delegated cgroup
// agentjail is started in, below our own unified cgroup (origDir); its
// clean-up moves us back home first.
func hybridDelegated(t *testing.T) (mnt mount, origDir, x string) {
	const root = "/sys/fs/cgroup/unified"
	pcData, err := os.ReadFile("/proc/self/cgroup")
	require.NoError(t, err)
	pc, err := parseProcCgroup(pcData)
	require.NoError(t, err)
	require.True(t, pc.HasUnified)
	mnt = mount{Point: root, Root: "/", Type: "cgroup2"}
	origDir, err = cgroupDir(mnt, pc.Unified)
	require.NoError(t, err)

	x = filepath.Join(pc.Unified, fmt.Sprintf("agentjail-v2test-%d", os.Getpid()))
	xDir := filepath.Join(root, x)
	require.NoError(t, os.Mkdir(xDir, 0o755))
	t.Cleanup(func() {
		// back home first, then remove the tree bottom-up
		assert.NoError(t, writeProcs(filepath.Join(origDir, "cgroup.procs"), os.Getpid()))
		var dirs []string
		filepath.WalkDir(xDir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		slices.Reverse(dirs)
		for _, d := range dirs {
			assert.NoError(t, unix.Rmdir(d), d)
		}
	})
	return mnt, origDir, x
}

// refusesV2Busy: someone else in X is refused, with the fix in the
// message; so is a unified hierarchy without memory when it is required.
func refusesV2Busy(t *testing.T, mnt mount, origDir, x string) {
	xDir := filepath.Join(mnt.Point, x)
	other := shChild(t, "exec sleep 1000")
	require.NoError(t, writeProcs(filepath.Join(xDir, "cgroup.procs"), other.pid()))
	require.NoError(t, writeProcs(filepath.Join(xDir, "cgroup.procs"), os.Getpid()))
	_, err := openV2(mnt, x, "agentjail-test", false)
	require.ErrorIs(t, err, ErrOwnCgroupBusy)
	assert.Contains(t, err.Error(), "Delegate=yes")
	t.Logf("expected error: %v", err)
	require.NoError(t, writeProcs(filepath.Join(origDir, "cgroup.procs"), other.pid()))
	other.cmd.Process.Kill()
	other.wait(5 * time.Second)

	_, err = openV2(mnt, x, "agentjail-test", true)
	assert.ErrorIs(t, err, ErrNoController, "memory is required for real")
}

// opensV2AsSupervisor: with only us in X, we move to X/supervisor.
func opensV2AsSupervisor(t *testing.T, mnt mount, x string) *Manager {
	xDir := filepath.Join(mnt.Point, x)
	m, err := openV2(mnt, x, "agentjail-test", false)
	require.NoError(t, err)
	assert.Equal(t, []int{os.Getpid()}, procsOf(t, filepath.Join(xDir, supervisorName)))
	assert.Empty(t, procsOf(t, xDir))
	assert.Equal(t, filepath.Join(xDir, "agentjail-test"), m.v2base)
	// Re-open from inside the supervisor: same place, no nesting.
	m2, err := openV2(mnt, filepath.Join(x, supervisorName), "agentjail-test", false)
	require.NoError(t, err)
	assert.Equal(t, m.v2base, m2.v2base)
	assert.Equal(t, V2, m.Version())
	// Only a v2 mount without favordynmods makes a by-pid attach wait
	// (what `agentjail check` and the daemon's start-up warn about): the
	// mount's option must reach the manager.
	assert.True(t, m.AttachWaits(), "this test's mount has no favordynmods")
	favored := mnt
	favored.FavorDynmods = true
	m3, err := openV2(favored, filepath.Join(x, supervisorName), "agentjail-test", false)
	require.NoError(t, err)
	assert.False(t, m3.AttachWaits(), "a favordynmods mount does not wait")
	assert.Empty(t, m.Controllers())
	assert.True(t, m.feat.kill, "cgroup.kill (5.14+)")
	return m
}

// v2GroupLife: a group's creation (none with limits), attach, cpu.stat,
// stats, cgroup.kill and Delete.
func v2GroupLife(t *testing.T, m *Manager) {
	_, err := m.Create("j", Resources{MemoryBytes: 1 << 20})
	assert.ErrorIs(t, err, ErrNoController)
	assertGone(t, m.groupDirs("j"))

	g, err := m.Create("j", Resources{})
	require.NoError(t, err)
	t.Cleanup(func() { g.Delete() })
	c := shChild(t, "sleep 1000 & while :; do :; done")
	require.NoError(t, g.Attach(c.pid()))
	assert.Equal(t, []int{c.pid()}, procsOf(t, g.dirs[0]))
	c.release()
	// The loop's CPU shows in cpu.stat; on a loaded machine 50 ms of it
	// may take far longer than 50 ms of wall time: wait for it (10 s).
	var cpu time.Duration
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		cpu, err = g.CPUTime()
		require.NoError(t, err)
		if cpu > 50*time.Millisecond {
			break
		}
	}
	assert.Greater(t, cpu, 50*time.Millisecond, "cpu.stat usage_usec")
	st, err := g.Stats()
	require.NoError(t, err)
	t.Logf("stats: %+v", st)
	assert.EqualValues(t, -1, st.PeakMemoryBytes)
	assert.Empty(t, st.PeakMemorySource)
	assert.EqualValues(t, -1, st.PidsPeak)
	assert.GreaterOrEqual(t, st.CPUTime, cpu)
	_, err = g.OOMEvents()
	assert.ErrorIs(t, err, ErrNoController)

	require.NoError(t, g.Kill()) // cgroup.kill
	ws := c.wait(5 * time.Second)
	assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "%v", ws)
	require.NoError(t, g.Delete())
	assertGone(t, g.dirs)
}

// v2StaleRemove: Stale + Remove (containerd's cgroup2 delete) of a
// crashed group.
func v2StaleRemove(t *testing.T, m *Manager) {
	g2, err := m.Create("crashed", Resources{})
	require.NoError(t, err)
	c2 := shChild(t, "exec sleep 1000")
	require.NoError(t, g2.Attach(c2.pid()))
	unlockDirs(g2.lockFDs) // what the kernel does when a process dies
	g2.lockFDs = nil
	names, err := m.Stale()
	require.NoError(t, err)
	assert.Equal(t, []string{"crashed"}, names)
	require.NoError(t, m.Remove("crashed"))
	assertGone(t, g2.dirs)
	c2.wait(5 * time.Second)
}

// BenchmarkLifecycle measures the per-run cost this package adds:
// Create + Attach + Stats + Delete of a group (the process attached is a
// sleeper started, and reaped, outside the timed part; CPUTime is timed
// separately since the watchdog calls it repeatedly).
func BenchmarkLifecycle(b *testing.B) {
	if os.Geteuid() != 0 || cgroups.Mode() == cgroups.Unavailable {
		b.Skip("skipping: needs root and cgroups")
	}
	m, err := Open(testSubtree())
	if err != nil {
		b.Skipf("skipping: %v", err)
	}
	var create, attach, stats, cputime, del time.Duration
	iters := 0
	for i := 0; b.Loop(); i++ {
		iters++
		b.StopTimer()
		cmd := exec.Command("/bin/sleep", "1000")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()

		t0 := time.Now()
		g, err := m.Create("bench-"+strconv.Itoa(i), Resources{MemoryBytes: 256 << 20, Pids: 64, CPUs: 1})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := g.Attach(cmd.Process.Pid); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()

		b.StopTimer() // the run: python exits and is reaped
		g.CPUTime()   // first call opens the file
		t3 := time.Now()
		g.CPUTime()
		cputime += time.Since(t3)
		cmd.Process.Kill()
		cmd.Wait()
		b.StartTimer()

		t4 := time.Now()
		if _, err := g.Stats(); err != nil {
			b.Fatal(err)
		}
		t5 := time.Now()
		if err := g.Delete(); err != nil {
			b.Fatal(err)
		}
		t6 := time.Now()
		create += t1.Sub(t0)
		attach += t2.Sub(t1)
		stats += t5.Sub(t4)
		del += t6.Sub(t5)
	}
	n := float64(iters)
	b.ReportMetric(float64(create.Microseconds())/n, "create-µs")
	b.ReportMetric(float64(attach.Microseconds())/n, "attach-µs")
	b.ReportMetric(float64(stats.Microseconds())/n, "stats-µs")
	b.ReportMetric(float64(del.Microseconds())/n, "delete-µs")
	b.ReportMetric(float64(cputime.Nanoseconds())/n/1000, "cputime-µs")
	for _, base := range m.groupDirs("") {
		unix.Rmdir(base)
	}
}
