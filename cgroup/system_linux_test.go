package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/cgroups/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"agentjail/internal/systest"
)

// System tests: they create real groups, only below this process's own
// cgroup, in a subtree named after the test process, and remove them.

const python = "/usr/bin/python3"

type requirement int

const (
	// needManager: a Manager from Open (v1 or v2, whatever the host has).
	needManager requirement = iota
	// needHybridUnified: a hybrid host's unified (v2) mount, used to test
	// the v2 mechanics that need no controller.
	needHybridUnified
)

// requireSystem is the package's entry to the one skip helper
// (systest.Require): it skips the test with the reason when it cannot run
// here (not root, no memory controller, python3 or the delegation it needs
// missing), or fails it under AGENTJAIL_REQUIRE_ALL=1, and otherwise
// returns a Manager on a per-process test subtree that is removed after
// the test (nil for needHybridUnified).
func requireSystem(t *testing.T, need requirement) *Manager {
	t.Helper()
	systest.Require(t, systest.Root)
	switch need {
	case needHybridUnified:
		// The shape of the host, not a missing need: a v2-only host runs
		// the real v2 code in every other test instead.
		if cgroups.Mode() != cgroups.Hybrid {
			t.Skip("skipping: not a hybrid cgroup host (no v2 mount at /sys/fs/cgroup/unified)")
		}
		return nil
	}
	systest.Require(t, systest.CgroupMem, systest.Python)
	for _, p := range []string{"/bin/sh", "/bin/sleep"} {
		if _, err := os.Stat(p); err != nil {
			missingNeed(t, "%s: %v", p, err)
		}
	}
	m, err := Open(testSubtree())
	if errors.Is(err, ErrNoController) || errors.Is(err, ErrOwnCgroupBusy) || errors.Is(err, ErrNotWritable) {
		missingNeed(t, "a delegated cgroup of its own: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { removeSubtree(t, m) })
	return m
}

// missingNeed is systest.Require for the needs systest has no name for:
// it skips t, or fails it under AGENTJAIL_REQUIRE_ALL=1, where a skip
// would let the whole package pass without creating one group (on a v2
// host run outside a delegated cgroup every system test would skip).
func missingNeed(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("AGENTJAIL_REQUIRE_ALL") == "1" {
		t.Fatalf("needs "+format+" (AGENTJAIL_REQUIRE_ALL=1)", args...)
	}
	t.Skipf("skipping: needs "+format, args...)
}

func testSubtree() string { return fmt.Sprintf("agentjail-test-%d", os.Getpid()) }

// removeSubtree removes what a test left in the subtree, then the subtree.
func removeSubtree(t *testing.T, m *Manager) {
	names, err := m.Stale()
	assert.NoError(t, err)
	for _, n := range names {
		t.Errorf("test left group %s behind", n)
		assert.NoError(t, m.Remove(n))
	}
	bases := []string{m.v2base}
	if m.version == V1 {
		bases = nil
		for _, c := range m.ctrls {
			bases = append(bases, c.base)
		}
	}
	for _, b := range bases {
		if err := unix.Rmdir(b); err != nil && !errors.Is(err, unix.ENOENT) {
			t.Errorf("removing test subtree %s: %v", b, err)
		}
	}
}

// create makes a group that is deleted after the test even if it fails.
func create(t *testing.T, m *Manager, name string, r Resources) *Group {
	t.Helper()
	g, err := m.Create(name, r)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, g.Delete()) })
	return g
}

// child is a process held at a gate: it starts, then waits for a line on
// its stdin before running the rest, so that the test can Attach it first
// (as agentjail attaches its init just before exec'ing python).
type child struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	done   chan struct{}
	err    error
}

func startChild(t *testing.T, argv ...string) *child {
	t.Helper()
	c := &child{t: t, cmd: exec.Command(argv[0], argv[1:]...), done: make(chan struct{})}
	var err error
	c.stdin, err = c.cmd.StdinPipe()
	require.NoError(t, err)
	out, err := c.cmd.StdoutPipe()
	require.NoError(t, err)
	c.stdout = bufio.NewReader(out)
	// A file, not a buffer: with a buffer, Wait would also wait for
	// background children holding the pipe. Logged after the test.
	errFile, err := os.CreateTemp(t.TempDir(), "stderr")
	require.NoError(t, err)
	c.cmd.Stderr = errFile
	require.NoError(t, c.cmd.Start())
	errFile.Close()
	go func() {
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.done
		if b, _ := os.ReadFile(errFile.Name()); len(b) > 0 {
			t.Logf("stderr of %v: %s", argv, b)
		}
	})
	return c
}

// shChild runs script after the gate in /bin/sh.
func shChild(t *testing.T, script string) *child {
	return startChild(t, "/bin/sh", "-c", "read gate; "+script)
}

func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) release() {
	_, err := io.WriteString(c.stdin, "go\n")
	require.NoError(c.t, err)
}

// wait waits for the exit and returns the wait status.
func (c *child) wait(timeout time.Duration) syscall.WaitStatus {
	c.t.Helper()
	select {
	case <-c.done:
	case <-time.After(timeout):
		c.t.Fatalf("child %d still running after %v", c.pid(), timeout)
	}
	return c.cmd.ProcessState.Sys().(syscall.WaitStatus)
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

func procsOf(t *testing.T, dir string) []int {
	t.Helper()
	p, err := readProcs(dir)
	require.NoError(t, err)
	return p
}

func assertGone(t *testing.T, dirs []string) {
	t.Helper()
	for _, d := range dirs {
		_, err := os.Stat(d)
		assert.True(t, errors.Is(err, os.ErrNotExist), "%s still exists (err %v)", d, err)
	}
}

func TestSystemOpen(t *testing.T) {
	m := requireSystem(t, needManager)
	ctrls := m.Controllers()
	t.Logf("version %s, controllers %v, features %+v", m.Version(), ctrls, m.feat)
	assert.Contains(t, ctrls, "memory")
	switch m.Version() {
	case V1:
		// this machine (hybrid): all four v1 hierarchies are expected
		for _, c := range m.ctrls {
			assert.DirExists(t, c.base)
			assert.True(t, strings.HasPrefix(c.base, c.own+"/"), "%s below our own %s", c.base, c.own)
		}
		assert.Equal(t, V1, m.Version())
		assert.False(t, m.AttachWaits(), "v1 jails join by their own thread")
	case V2:
		assert.DirExists(t, m.v2base)
		own := readTrim(t, "/proc/self/cgroup")
		assert.True(t, strings.HasSuffix(own, "/"+supervisorName), "we moved to the supervisor leaf: %s", own)
	}
	// Open again in the same process: same place (on v2 it must not nest
	// a supervisor inside the supervisor).
	m2, err := Open(testSubtree())
	require.NoError(t, err)
	assert.Equal(t, m.groupDirs("x"), m2.groupDirs("x"))

	_, err = Open("../escape")
	assert.ErrorIs(t, err, ErrInvalidName)
}

func TestSystemCreateSetsLimits(t *testing.T) {
	m := requireSystem(t, needManager)
	const mem = 100<<20 + 123 // not page aligned: the kernel rounds down
	g := create(t, m, "limits", Resources{MemoryBytes: mem, Pids: 16, CPUs: 0.5})
	assert.Equal(t, "limits", g.Name())
	assert.Equal(t, Resources{MemoryBytes: mem, Pids: 16, CPUs: 0.5}, g.Resources(), "what a group made ahead is matched against")
	want := int64(mem) / 4096 * 4096
	switch m.Version() {
	case V1:
		md := m.ctrlDir("memory", "limits")
		assert.Equal(t, strconv.FormatInt(want, 10), readTrim(t, filepath.Join(md, "memory.limit_in_bytes")))
		if m.feat.memsw {
			assert.Equal(t, strconv.FormatInt(want, 10), readTrim(t, filepath.Join(md, "memory.memsw.limit_in_bytes")), "memory+swap = memory: no swap")
		}
		assert.Equal(t, "0", readTrim(t, filepath.Join(md, "memory.swappiness")))
		assert.Equal(t, "16", readTrim(t, filepath.Join(m.ctrlDir("pids", "limits"), "pids.max")))
		cd := m.ctrlDir("cpu", "limits")
		assert.Equal(t, "100000", readTrim(t, filepath.Join(cd, "cpu.cfs_period_us")))
		assert.Equal(t, "50000", readTrim(t, filepath.Join(cd, "cpu.cfs_quota_us")))
		assert.DirExists(t, m.ctrlDir("cpuacct", "limits"))
		// and nowhere else: no group in devices, freezer, cpuset, blkio...
		for _, other := range []string{"devices", "freezer", "cpuset", "blkio"} {
			for _, c := range m.ctrls {
				if strings.Contains(c.mount, other) {
					t.Errorf("created in %s", c.mount)
				}
			}
		}
	case V2:
		d := m.ctrlDir("memory", "limits")
		assert.Equal(t, strconv.FormatInt(want, 10), readTrim(t, filepath.Join(d, "memory.max")))
		if m.feat.swapMax {
			assert.Equal(t, "0", readTrim(t, filepath.Join(d, "memory.swap.max")))
		}
		if m.feat.oomGroup {
			assert.Equal(t, "1", readTrim(t, filepath.Join(d, "memory.oom.group")))
		}
		assert.Equal(t, "16", readTrim(t, filepath.Join(d, "pids.max")))
		assert.Equal(t, "50000 100000", readTrim(t, filepath.Join(d, "cpu.max")))
	}
	st, err := g.Stats()
	require.NoError(t, err)
	assert.Equal(t, want, st.MemoryLimitBytes, "the limit reported is the one read back")

	// A second Create of the same name fails and leaves the first intact.
	_, err = m.Create("limits", Resources{})
	assert.ErrorIs(t, err, ErrExists)
	for _, d := range g.dirs {
		assert.DirExists(t, d)
	}

	// No limits at all: still created, swap still off.
	g2 := create(t, m, "nolimits", Resources{})
	if m.Version() == V1 {
		assert.Equal(t, "0", readTrim(t, filepath.Join(g2.memDir, "memory.swappiness")))
		assert.Equal(t, "max", readTrim(t, filepath.Join(g2.pidsDir, "pids.max")))
		assert.Equal(t, "-1", readTrim(t, filepath.Join(m.ctrlDir("cpu", "nolimits"), "cpu.cfs_quota_us")))
	}
}

func TestSystemCreateFailureLeavesNothing(t *testing.T) {
	m := requireSystem(t, needManager)
	for _, name := range []string{"", "..", "a/b", "a..b", "x y"} {
		_, err := m.Create(name, Resources{})
		assert.ErrorIs(t, err, ErrInvalidName, "%q", name)
	}
	_, err := m.Create("neg", Resources{MemoryBytes: -5})
	assert.ErrorIs(t, err, ErrInvalidResources)
	assertGone(t, m.groupDirs("neg"))

	// The kernel refuses pids.max above PID_MAX_LIMIT (4M): Create fails
	// after the directories were made and must remove them all.
	_, err = m.Create("kernel-refuses", Resources{MemoryBytes: 64 << 20, Pids: 1 << 30})
	require.Error(t, err)
	t.Logf("expected error: %v", err)
	assertGone(t, m.groupDirs("kernel-refuses"))
	names, err := m.Stale()
	require.NoError(t, err)
	assert.Empty(t, names)
}

func TestSystemAttach(t *testing.T) {
	m := requireSystem(t, needManager)
	g := create(t, m, "attach", Resources{MemoryBytes: 64 << 20, Pids: 8})
	c := shChild(t, "exec sleep 1000")
	require.NoError(t, g.Attach(c.pid()))
	for _, d := range g.dirs {
		assert.Contains(t, procsOf(t, d), c.pid(), "in cgroup.procs of %s", d)
	}
	// and the kernel's view of the process agrees
	pc, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", c.pid()))
	require.NoError(t, err)
	t.Logf("/proc/%d/cgroup:\n%s", c.pid(), pc)
	assert.Contains(t, string(pc), "/"+testSubtree()+"/attach\n")
	assert.Error(t, g.Attach(0))
	assert.Error(t, g.Attach(1<<30), "no such process")
}

// JoinFiles: on v1 a thread that writes "0" to each of its files moves
// itself, and only itself, into the group in every hierarchy; on v2 it
// gives nothing (the caller attaches the process).
func TestSystemJoinFiles(t *testing.T) {
	m := requireSystem(t, needManager)
	g := create(t, m, "join", Resources{MemoryBytes: 64 << 20, Pids: 8})
	fds, err := g.JoinFiles()
	require.NoError(t, err)
	if m.Version() == V2 {
		assert.Nil(t, fds)
		return
	}
	require.Len(t, fds, len(g.dirs))
	type seen struct {
		tid         int
		joined, own string
		err         error
	}
	done := make(chan seen)
	go func() {
		// A thread of its own, moved back to this process's groups
		// before it is let go.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		s := seen{tid: unix.Gettid()}
		for _, fd := range fds {
			if _, err := unix.Write(fd, []byte("0")); err != nil && s.err == nil {
				s.err = err
			}
			unix.Close(fd)
		}
		b, _ := os.ReadFile("/proc/thread-self/cgroup")
		s.joined = string(b)
		for _, c := range m.ctrls {
			if err := os.WriteFile(filepath.Join(c.own, "tasks"), []byte("0"), 0); err != nil && s.err == nil {
				s.err = err
			}
		}
		b, _ = os.ReadFile("/proc/thread-self/cgroup")
		s.own = string(b)
		done <- s
	}()
	s := <-done
	require.NoError(t, s.err)
	for _, c := range m.Controllers() {
		assert.Regexp(t, fmt.Sprintf(`(?m)^\d+:([^:]*,)?%s(,[^:]*)?:.*/%s/join$`, c, testSubtree()), s.joined, "the thread in the group's %s cgroup", c)
	}
	assert.NotContains(t, s.own, "/join\n", "moved back")
	// Only that thread: no other task of this process was in the group.
	for _, d := range g.dirs {
		b, err := os.ReadFile(filepath.Join(d, "tasks"))
		require.NoError(t, err)
		assert.Empty(t, strings.TrimSpace(string(b)), "tasks of %s after the thread left", d)
	}
	st, err := g.Stats()
	require.NoError(t, err)
	assert.Equal(t, peakSourceV1, st.PeakMemorySource, "the peak counts from the join")
}

// Rename (v1) moves the group in every hierarchy; files opened before it
// still act on the group; a taken name leaves the group as it was.
func TestSystemRename(t *testing.T) {
	m := requireSystem(t, needManager)
	g := create(t, m, "before", Resources{MemoryBytes: 64 << 20, Pids: 8})
	if m.Version() == V2 {
		assert.ErrorIs(t, g.Rename("after"), ErrUnsupported)
		return
	}
	fds, err := g.JoinFiles()
	require.NoError(t, err)
	create(t, m, "taken", Resources{})
	assert.ErrorIs(t, g.Rename("taken"), ErrExists)
	assert.Equal(t, "before", g.Name())
	assert.ErrorIs(t, g.Rename("../x"), ErrInvalidName)
	require.NoError(t, g.Rename("after"))
	assert.Equal(t, "after", g.Name())
	assert.Empty(t, systest.CgroupDirs("before"))
	assert.Len(t, systest.CgroupDirs("after"), len(m.Controllers()))
	// A process joins the renamed group through the files opened before.
	c := shChild(t, "exec sleep 1000")
	for _, fd := range fds {
		_, err := unix.Write(fd, []byte(strconv.Itoa(c.pid())))
		assert.NoError(t, err)
		unix.Close(fd)
	}
	pc, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", c.pid()))
	require.NoError(t, err)
	assert.Equal(t, len(m.Controllers()), strings.Count(string(pc), "/"+testSubtree()+"/after\n"), "%s", pc)
	st, err := g.Stats()
	require.NoError(t, err)
	assert.Equal(t, peakSourceV1, st.PeakMemorySource)
	assert.NoError(t, g.Kill())
}

func TestSystemPeakMemory(t *testing.T) {
	m := requireSystem(t, needManager)
	g := create(t, m, "peak", Resources{MemoryBytes: 256 << 20, Pids: 16})
	c := startChild(t, "/bin/sh", "-c", "read gate; exec "+python+` -c "b=b'x'*(64<<20)"`)
	require.NoError(t, g.Attach(c.pid()))
	c.release()
	ws := c.wait(30 * time.Second)
	require.True(t, ws.Exited() && ws.ExitStatus() == 0, "python: %v", ws)
	st, err := g.Stats()
	require.NoError(t, err)
	t.Logf("stats: %+v (peak %.1f MiB)", st, float64(st.PeakMemoryBytes)/(1<<20))
	if m.Version() == V2 && !m.feat.peak {
		assert.EqualValues(t, -1, st.PeakMemoryBytes)
		assert.Empty(t, st.PeakMemorySource)
		return
	}
	assert.GreaterOrEqual(t, st.PeakMemoryBytes, int64(64<<20))
	assert.Less(t, st.PeakMemoryBytes, int64(64<<20+16<<20))
	switch {
	case m.Version() == V1:
		assert.Equal(t, "memory.max_usage_in_bytes", st.PeakMemorySource)
	case m.feat.peakReset:
		assert.Equal(t, "memory.peak", st.PeakMemorySource)
	default:
		assert.Equal(t, "memory.peak (since creation)", st.PeakMemorySource)
	}
	assert.Zero(t, st.OOMKills)
	assert.Zero(t, st.PidsMaxHits)
	assert.Positive(t, st.CPUTime)
}

// Memory a process charged before Attach stays with its old group: the
// peak only sees what it allocates afterwards. (This is why agentjail
// attaches the init just before exec'ing python.)
func TestSystemPeakExcludesMemoryBeforeAttach(t *testing.T) {
	m := requireSystem(t, needManager)
	if m.Version() == V2 && !m.feat.peak {
		t.Skip("skipping: kernel without memory.peak")
	}
	g := create(t, m, "preattach", Resources{MemoryBytes: 512 << 20})
	c := startChild(t, python, "-c", `import sys
b = b'x' * (96 << 20)
print('ready', flush=True)
sys.stdin.readline()
c = b'y' * (16 << 20)
`)
	line, err := c.stdout.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	require.NoError(t, g.Attach(c.pid()))
	c.release()
	ws := c.wait(30 * time.Second)
	require.True(t, ws.Exited() && ws.ExitStatus() == 0, "python: %v", ws)
	st, err := g.Stats()
	require.NoError(t, err)
	t.Logf("stats: %+v (peak %.1f MiB)", st, float64(st.PeakMemoryBytes)/(1<<20))
	assert.GreaterOrEqual(t, st.PeakMemoryBytes, int64(16<<20), "the post-attach 16 MiB is counted")
	assert.Less(t, st.PeakMemoryBytes, int64(48<<20), "the 96 MiB charged before Attach is not")
}

func TestSystemOOM(t *testing.T) {
	m := requireSystem(t, needManager)
	g := create(t, m, "oom", Resources{MemoryBytes: 32 << 20, Pids: 16})
	c := startChild(t, "/bin/sh", "-c", "read gate; exec "+python+` -c "b=b'x'*(64<<20)"`)
	require.NoError(t, g.Attach(c.pid()))
	ev, err := g.OOMEvents()
	require.NoError(t, err)
	ev2, err := g.OOMEvents()
	require.NoError(t, err)
	assert.Equal(t, ev, ev2, "same channel on a second call")
	select {
	case <-ev:
		t.Fatal("OOM event before anything ran")
	default:
	}
	c.release()
	select {
	case _, ok := <-ev:
		require.True(t, ok, "channel closed instead of an event")
	case <-time.After(20 * time.Second):
		t.Fatal("no OOM event")
	}
	ws := c.wait(20 * time.Second)
	assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "python OOM-killed: %v", ws)
	st, err := g.Stats()
	require.NoError(t, err)
	t.Logf("stats: %+v", st)
	assert.GreaterOrEqual(t, st.OOMKills, int64(1))
	if st.PeakMemoryBytes >= 0 {
		assert.LessOrEqual(t, st.PeakMemoryBytes, int64(32<<20), "the limit held")
	}
	require.NoError(t, g.Delete())
	select {
	case _, ok := <-ev:
		assert.False(t, ok, "Delete closes the channel (no spurious event from the removal)")
	case <-time.After(5 * time.Second):
		t.Fatal("channel not closed by Delete")
	}
}

func TestSystemCPUTime(t *testing.T) {
	m := requireSystem(t, needManager)
	spin := "while :; do :; done"

	t.Run("unlimited", func(t *testing.T) {
		g := create(t, m, "cpu", Resources{Pids: 8})
		c := shChild(t, spin)
		require.NoError(t, g.Attach(c.pid()))
		t0, err := g.CPUTime()
		require.NoError(t, err)
		assert.Less(t, t0, 50*time.Millisecond, "nothing ran yet")
		c.release()
		time.Sleep(300 * time.Millisecond)
		t1, err := g.CPUTime()
		require.NoError(t, err)
		time.Sleep(100 * time.Millisecond)
		t2, err := g.CPUTime()
		require.NoError(t, err)
		t.Logf("cpu time %v -> %v -> %v", t0, t1, t2)
		assert.Greater(t, t1, 100*time.Millisecond)
		assert.Greater(t, t2, t1, "the kept-open file is re-read by pread")
		st, err := g.Stats()
		require.NoError(t, err)
		assert.GreaterOrEqual(t, st.CPUTime, t2)
	})
	t.Run("quota", func(t *testing.T) {
		// 0.2 CPU: one second of spinning gets ~0.2 s of CPU, not ~1 s.
		g := create(t, m, "cpuquota", Resources{CPUs: 0.2})
		c := shChild(t, spin)
		require.NoError(t, g.Attach(c.pid()))
		c.release()
		time.Sleep(time.Second)
		used, err := g.CPUTime()
		require.NoError(t, err)
		t.Logf("cpu time in 1 s at 0.2 CPU: %v", used)
		assert.Greater(t, used, 50*time.Millisecond)
		assert.Less(t, used, 500*time.Millisecond)
	})
}

func TestSystemPidsLimit(t *testing.T) {
	m := requireSystem(t, needManager)
	g := create(t, m, "pids", Resources{Pids: 8})
	var loop strings.Builder
	for i := 0; i < 20; i++ {
		loop.WriteString("sleep 1000 & ")
	}
	c := shChild(t, loop.String()+"wait")
	require.NoError(t, g.Attach(c.pid()))
	c.release()
	c.wait(10 * time.Second) // dash gives up at the first failed fork
	st, err := g.Stats()
	require.NoError(t, err)
	t.Logf("stats: %+v", st)
	assert.Positive(t, st.PidsMaxHits, "forks refused by pids.max")
	if m.feat.pidsPeak {
		assert.LessOrEqual(t, st.PidsPeak, int64(8))
		assert.GreaterOrEqual(t, st.PidsPeak, int64(2))
	} else {
		assert.EqualValues(t, -1, st.PidsPeak)
	}
	// The sleepers outlive the shell: Delete must kill them.
	require.NotEmpty(t, procsOf(t, g.pidsDir))
	require.NoError(t, g.Delete())
	assertGone(t, g.dirs)
}
