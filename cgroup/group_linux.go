package cgroup

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/containerd/cgroups/v3/cgroup2"
	"golang.org/x/sys/unix"
)

const (
	peakFileV1         = "memory.max_usage_in_bytes"
	peakSourceV1       = peakFileV1
	peakSourceV2       = "memory.peak"
	peakSourceV2Create = "memory.peak (since creation)"
)

// Group is one jail's cgroup (one directory per v1 hierarchy, or one v2
// directory). Its methods are safe for concurrent use (a watchdog calls
// CPUTime while the run goes on).
type Group struct {
	m       *Manager
	name    string
	dirs    []string  // every directory of the group
	memDir  string    // memory.* files ("" without memory controller)
	pidsDir string    // pids.* files
	cpuDir  string    // v1 cpuacct.usage / v2 cpu.stat
	limit   int64     // memory limit in force
	res     Resources // as asked for at Create

	mu       sync.Mutex
	lockFDs  []int          // flocked directories: mark the group as live (see Stale)
	kept     map[string]int // files read more than once, by name, held open for pread (readParsed)
	peakFD   int            // v2: memory.peak, reset at Attach; the reset is per fd
	peakSrc  string
	baseOOM  memEvents // OOM counters at Attach (v1: only OOMKill)
	basePids int64     // pids.events max at Attach
	removed  []bool
	deleted  bool
	idle     bool // SetIdle(true) holds: its CPU bandwidth is cut
	oom      *oomWatch
}

// Create makes the jail group name below the subtree and sets its limits.
// It fails with ErrExists if the group is already there, and leaves
// nothing behind on failure.
func (m *Manager) Create(name string, r Resources) (*Group, error) {
	if err := validName(name); err != nil {
		return nil, fmt.Errorf("creating group: %w", err)
	}
	l, err := r.limits()
	if err != nil {
		return nil, fmt.Errorf("creating group %s: %w", name, err)
	}
	switch {
	case l.memory > 0 && !m.feat.memory:
		return nil, fmt.Errorf("creating group %s: memory limit: %w", name, ErrNoController)
	case l.pids > 0 && !m.feat.pids:
		return nil, fmt.Errorf("creating group %s: pids limit: %w", name, ErrNoController)
	case l.quotaUS > 0 && !m.feat.cpu:
		return nil, fmt.Errorf("creating group %s: cpu limit: %w", name, ErrNoController)
	}
	g := &Group{m: m, peakFD: -1, res: r, limit: limitInForce(l.memory, m.pageSize)}
	g.setName(name, m.groupDirs(name))
	g.removed = make([]bool, len(g.dirs))

	// mkdir (not MkdirAll) everywhere first: an existing group is an
	// error, never adopted, and never removed by our clean-up. Each
	// directory is flocked right after its mkdir, all of them, not only
	// the first: on v1 other processes may share a hierarchy (pids at "/")
	// while their memory cgroup, where our first directory is, differs;
	// their Stale must see our lock in the hierarchies they share with us.
	// (A Stale/Remove of another process in the microseconds between a
	// mkdir and its flock can only make this Create fail.)
	g.lockFDs = make([]int, 0, len(g.dirs))
	for i, d := range g.dirs {
		err := m.mkdir(d)
		if err != nil {
			g.undoCreate(i)
			if errors.Is(err, unix.EEXIST) {
				return nil, fmt.Errorf("creating group %s: %s: %w", name, d, ErrExists)
			}
			return nil, fmt.Errorf("creating group %s: mkdir %s: %w", name, d, notWritable(err))
		}
		fd, err := m.lockDir(d)
		if err != nil {
			g.undoCreate(i + 1)
			return nil, fmt.Errorf("creating group %s: %w", name, err)
		}
		g.lockFDs = append(g.lockFDs, fd)
	}
	if m.version == V2 {
		err = g.setV2(l)
	} else {
		err = g.setV1(l)
	}
	if err != nil {
		g.undoCreate(len(g.dirs))
		return nil, fmt.Errorf("creating group %s: setting limits: %w", name, err)
	}
	return g, nil
}

// undoCreate removes the first n directories of a failed Create and
// drops its locks.
func (g *Group) undoCreate(n int) {
	for i := n - 1; i >= 0; i-- {
		g.m.rmdir(g.dirs[i])
	}
	unlockDirs(g.lockFDs)
	g.lockFDs = nil
}

// setV1 writes the limits into the group's v1 files, in the order the
// kernel needs (memory.limit_in_bytes before memory.memsw.limit_in_bytes):
// one open, write and close each, no more (each jail pays it).
func (g *Group) setV1(l limits) error {
	type setting struct{ dir, file, value string }
	var set []setting
	if g.memDir != "" {
		set = append(set, setting{g.memDir, "memory.swappiness", "0"})
		if l.memory > 0 {
			v := strconv.FormatInt(l.memory, 10)
			set = append(set, setting{g.memDir, "memory.limit_in_bytes", v})
			if g.m.feat.memsw {
				// memory+swap = memory: no swap.
				set = append(set, setting{g.memDir, "memory.memsw.limit_in_bytes", v})
			}
			if g.m.feat.kmemTCP {
				// v1 counts socket buffers apart from the memory counter,
				// and only where this limit is set: without it a jail's
				// TCP buffers were the host's (v2 charges them to the
				// group).
				set = append(set, setting{g.memDir, "memory.kmem.tcp.limit_in_bytes", v})
			}
		}
	}
	if l.pids > 0 && g.pidsDir != "" {
		set = append(set, setting{g.pidsDir, "pids.max", strconv.FormatInt(l.pids, 10)})
	}
	if l.quotaUS > 0 {
		// cpu.cfs_period_us is not written: a new group's is the
		// kernel's default, cpuPeriodUS, whatever its parent's is.
		set = append(set, setting{g.m.ctrlDir("cpu", g.name), "cpu.cfs_quota_us", strconv.FormatInt(l.quotaUS, 10)})
	}
	for _, st := range set {
		if err := g.write(st.dir, st.file, []byte(st.value)); err != nil {
			return fmt.Errorf("writing %s %s: %w", st.file, st.value, err)
		}
	}
	return nil
}

// setV2 sets the limits through containerd's cgroup2.
func (g *Group) setV2(l limits) error {
	res := &cgroup2.Resources{}
	f := g.m.feat
	if f.memory {
		mem := &cgroup2.Memory{}
		if l.memory > 0 {
			mem.Max = &l.memory
		}
		if f.swapMax {
			zero := int64(0)
			mem.Swap = &zero
		}
		if f.oomGroup {
			yes := true
			mem.OOMGroup = &yes
		}
		res.Memory = mem
	}
	if l.pids > 0 {
		res.Pids = &cgroup2.Pids{Max: l.pids}
	}
	if l.quotaUS > 0 {
		period := uint64(cpuPeriodUS)
		res.CPU = &cgroup2.CPU{Max: cgroup2.NewCPUMax(&l.quotaUS, &period)}
	}
	mgr, err := cgroup2.Load(strings.TrimPrefix(g.dirs[0], g.m.mount), cgroup2.WithMountpoint(g.m.mount))
	if err != nil {
		return err
	}
	return mgr.Update(res)
}

// deleteV2 deletes an empty v2 group through containerd.
func deleteV2(mnt, rel string) error {
	if !exists(filepath.Join(mnt, rel)) {
		return nil
	}
	mgr, err := cgroup2.Load(rel, cgroup2.WithMountpoint(mnt))
	if err != nil {
		return err
	}
	return mgr.Delete()
}

// Name is the group's name below the subtree.
func (g *Group) Name() string { return g.name }

// Resources are the limits the group was created with.
func (g *Group) Resources() Resources { return g.res }

// Rename gives a v1 group another name below the same subtree, in every
// hierarchy; the files it holds open (its locks, JoinFiles' fds) stay
// valid. It fails with ErrExists if the name is taken, and then leaves
// the group as it was. v2 cannot rename a cgroup (ErrUnsupported).
func (g *Group) Rename(name string) error {
	if err := validName(name); err != nil {
		return fmt.Errorf("renaming group %s: %w", g.name, err)
	}
	if g.m.version == V2 {
		return fmt.Errorf("renaming group %s: cgroup v2: %w", g.name, ErrUnsupported)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return fmt.Errorf("renaming group %s: %w", g.name, ErrDeleted)
	}
	dirs := g.m.groupDirs(name)
	for i, d := range g.dirs {
		if err := g.m.rename(d, dirs[i]); err != nil {
			for k := i - 1; k >= 0; k-- {
				if g.m.rename(dirs[k], g.dirs[k]) != nil {
					g.dirs[k] = dirs[k] // where it is: Delete removes it there
				}
			}
			if errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY) {
				err = ErrExists
			}
			return fmt.Errorf("renaming group %s to %s: %s: %w", g.name, name, d, err)
		}
	}
	g.setName(name, dirs)
	return nil
}

// open opens file of dir, one of the group's directories, through the fd
// that holds the directory's lock: the kernel walks one name, not the
// dozen components of the path (each a kernfs lookup), and the file is
// this directory's whatever happened to the path. g.mu is held, or g is
// not yet shared (Create).
func (g *Group) open(dir, file string, flags int) (int, error) {
	fd, name := g.at(dir, file)
	return openAt(fd, name, flags)
}

// write writes data to file of dir as open opens it.
func (g *Group) write(dir, file string, data []byte) error {
	fd, name := g.at(dir, file)
	return writeFileAt(fd, name, data)
}

// at is dir's lock fd and file, or, for a directory g holds no lock on
// (none after Delete), AT_FDCWD and the whole path. g.mu is held, or g is
// not yet shared: Delete closes the lock fds.
func (g *Group) at(dir, file string) (int, string) {
	for i, d := range g.dirs {
		if d == dir && i < len(g.lockFDs) {
			return g.lockFDs[i], file
		}
	}
	return unix.AT_FDCWD, filepath.Join(dir, file)
}

// setName points g at name, whose directories are dirs (groupDirs).
func (g *Group) setName(name string, dirs []string) {
	m := g.m
	g.name, g.dirs = name, dirs
	if m.feat.memory {
		g.memDir = m.ctrlDir("memory", name)
	}
	if m.feat.pids {
		g.pidsDir = m.ctrlDir("pids", name)
	}
	if m.feat.cpuacct {
		g.cpuDir = m.ctrlDir("cpuacct", name)
	}
}

// Attach moves process pid into the group in every hierarchy, then resets
// the memory high-water mark so that the peak counts only what the process
// charges from now on (pages it charged before stay with its old group:
// nothing moves charges, v1 move_charge_at_immigrate is left 0), and
// records the OOM and pids.events counters as the baseline for Stats.
func (g *Group) Attach(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("attaching pid %d to group %s: invalid pid", pid, g.name)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return fmt.Errorf("attaching pid %d to group %s: %w", pid, g.name, ErrDeleted)
	}
	for _, d := range g.dirs {
		if err := writeProcs(filepath.Join(d, "cgroup.procs"), pid); err != nil {
			return fmt.Errorf("attaching pid %d to %s: %w", pid, d, err)
		}
	}
	if err := g.resetPeak(); err != nil {
		return fmt.Errorf("attaching pid %d to group %s: %w", pid, g.name, err)
	}
	if err := g.readBaseline(); err != nil {
		return fmt.Errorf("attaching pid %d to group %s: %w", pid, g.name, err)
	}
	return nil
}

// JoinFiles is the fast way into a v1 group: it returns the group's
// `tasks` file of every hierarchy, opened for writing, for one thread to
// write "0" to each (move itself), and does what Attach does after its
// move: the high-water mark reset and the baseline. The kernel moves a
// thread that moves itself this way without taking the global
// cgroup_threadgroup_rwsem for writing, whose every writer after a quiet
// spell waits an RCU grace period (4.8 to 15.4 ms per move on a host
// without favordynmods, v1 or v2, in BENCHMARKS.md's scripts/benchmarks/cgmove.c
// table; a write to cgroup.procs takes it, whoever writes). (Kernels without the single-thread migration
// optimisation, commit 9a3284fad42f, take the lock here too: slower, the
// same result.) Only the calling thread moves: the caller must be a
// thread that will exec (the exec ends its other threads, and the new
// program's memory is charged to the group of the thread that exec'd it,
// the owner of the new mm), and it must not exec if a write fails. The
// kernel checks the opener's credentials, not the writer's. The caller
// closes the fds. On v2 a thread cannot leave its domain alone: JoinFiles
// returns nil and the caller uses Attach.
func (g *Group) JoinFiles() ([]int, error) {
	if g.m.version == V2 {
		return nil, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return nil, fmt.Errorf("joining group %s: %w", g.name, ErrDeleted)
	}
	fds := make([]int, 0, len(g.dirs))
	fail := func(err error) ([]int, error) {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("joining group %s: %w", g.name, err)
	}
	for _, d := range g.dirs {
		fd, err := g.open(d, "tasks", unix.O_WRONLY)
		if err != nil {
			return fail(err)
		}
		fds = append(fds, fd)
	}
	// Nothing is in the group yet: what the thread charges from its move
	// on is counted.
	if err := g.resetPeak(); err != nil {
		return fail(err)
	}
	if err := g.readBaseline(); err != nil {
		return fail(err)
	}
	return fds, nil
}

// Kill SIGKILLs every process in the group: v2 cgroup.kill when the kernel
// has it (returns at once; the kernel also stops concurrent forks), else
// kill(2) of each pid in cgroup.procs, repeated until the group is empty
// (at most 2 s). On v1 a pid may be reused between the read and the kill;
// the window is a few microseconds and the pids limit bounds forks.
func (g *Group) Kill() error {
	if g.m.version == V2 && g.m.feat.kill {
		// By path: Kill does not take g.mu, and Delete may close the
		// lock fds (whose numbers may then be another file's) meanwhile.
		err := writeFile(filepath.Join(g.dirs[0], "cgroup.kill"), []byte("1"))
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("killing group %s: %w", g.name, err)
	}
	deadline := time.Now().Add(deleteTimeout)
	for _, d := range g.dirs {
		if err := g.m.killAndWait(d, deadline); err != nil {
			return fmt.Errorf("killing group %s: %w", g.name, err)
		}
		if g.m.version == V1 {
			// processes are attached to every hierarchy at once; other
			// directories are handled by Delete if they differ.
			break
		}
	}
	return nil
}

// Delete kills what is left in the group, waits (at most 2 s) for it to be
// empty, removes its directory in every hierarchy and closes what it
// holds; the OOMEvents channel is closed. It is idempotent, and can be
// retried after an error (which names the path). An error still closes
// every descriptor and drops the group's live mark, so a caller that gives
// up leaks nothing and Manager.Stale reports what is left.
//
// The common case, an already empty group, costs one rmdir per directory:
// rmdir itself is the emptiness test (EBUSY while tasks remain).
func (g *Group) Delete() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return nil
	}
	if g.oom != nil {
		g.oom.stop()
	}
	for _, fd := range g.kept {
		unix.Close(fd)
	}
	g.kept = nil
	if g.peakFD >= 0 {
		unix.Close(g.peakFD)
		g.peakFD = -1
	}
	defer func() {
		unlockDirs(g.lockFDs)
		g.lockFDs = nil
	}()
	if g.idle { // killed while idle (its memory limit, the daemon's end)
		g.m.unthrottle(g.name)
	}
	deadline := time.Now().Add(deleteTimeout)
	for i, d := range g.dirs {
		if g.removed[i] {
			continue
		}
		if err := g.rmdir(d, deadline); err != nil {
			return fmt.Errorf("deleting group %s: %w", g.name, err)
		}
		g.removed[i] = true
	}
	g.deleted = true
	return nil
}

// rmdir removes one directory of the group, killing its processes while
// rmdir says EBUSY.
func (g *Group) rmdir(dir string, deadline time.Time) error {
	backoff := 50 * time.Microsecond
	for {
		err := g.m.rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("removing %s: %w", dir, err)
		}
		pids, perr := readProcs(dir)
		if time.Now().After(deadline) {
			if perr == nil && len(pids) > 0 {
				return fmt.Errorf("removing %s: processes %v: %w", dir, pids, ErrNotEmpty)
			}
			return fmt.Errorf("removing %s: %w", dir, err)
		}
		if perr == nil && len(pids) > 0 {
			g.m.signalGroup(dir, pids)
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 20*time.Millisecond)
	}
}
