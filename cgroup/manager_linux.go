package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"golang.org/x/sys/unix"
)

// v1Controllers are the only v1 hierarchies jail groups are created in.
var v1Controllers = []string{"memory", "pids", "cpu", "cpuacct"}

// v2Controllers are the controllers enabled for jail groups on v2.
var v2Controllers = []string{"memory", "pids", "cpu"}

const (
	// deleteTimeout bounds Kill's wait and Delete's wait for an empty group.
	deleteTimeout = 2 * time.Second
	// v2Mountpoint is where cgroups.Mode() looks for the unified hierarchy.
	v2Mountpoint = "/sys/fs/cgroup"
)

// Manager holds this process's place in the hierarchy; one per process
// (daemon or CLI). It is immutable after Open and safe for concurrent use.
type Manager struct {
	version  Version
	subtree  string
	pageSize int64
	feat     features

	// v1: the available hierarchies among memory, pids, cpu, cpuacct (in
	// that order; memory is always first and present).
	ctrls  []v1ctrl
	v1hier cgroup1.Hierarchy

	// v2
	mount   string   // cgroup2 mount point
	favor   bool     // mounted with favordynmods
	v2own   string   // directory of our own cgroup /X (we live in /X/supervisor)
	v2base  string   // directory /X/<subtree>, parent of the jails
	v2ctrls []string // controllers enabled for the jails

	// The directories jail groups are made in, and an O_PATH fd of each
	// (-1: not open); basefd_linux.go.
	baseDirs []string
	baseFDs  []int
}

// v1ctrl is one v1 hierarchy.
type v1ctrl struct {
	name  string // memory, pids, cpu or cpuacct
	mount string // mount point of its hierarchy
	own   string // directory of our own cgroup in it
	base  string // own/<subtree>: parent of the jails
	// rel is base relative to <dir(mount)>/<name>, the directory the
	// containerd subsystem of this controller is rooted at; it only
	// differs from the plain cgroup path for co-mounted controllers
	// (cpu,cpuacct) mounted under an unusual name.
	rel string
}

// features are the interface files the kernel offers jail groups, probed
// once by Open so that the per-run path does not stat.
type features struct {
	memory, pids, cpu, cpuacct bool
	memsw                      bool // v1 memory.memsw.limit_in_bytes (swap accounting on)
	kmemTCP                    bool // v1 memory.kmem.tcp.limit_in_bytes
	swapMax                    bool // v2 memory.swap.max
	oomGroup                   bool // v2 memory.oom.group
	peak                       bool // v2 memory.peak (5.19)
	peakReset                  bool // v2 memory.peak is writable (6.12)
	pidsPeak                   bool // pids.peak (6.13)
	kill                       bool // v2 cgroup.kill (5.14)
}

// Open finds this process's cgroup and prepares the subtree below it that
// jail groups are created in: <own>/<subtree> in each of the memory, pids,
// cpu and cpuacct hierarchies on v1 (and hybrid hosts), /X/<subtree> on v2
// after moving this process from /X to the leaf /X/supervisor.
func Open(subtree string) (*Manager, error) {
	if err := validName(subtree); err != nil {
		return nil, fmt.Errorf("opening cgroup subtree: %w", err)
	}
	pcData, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("reading own cgroup: %w", err)
	}
	pc, err := parseProcCgroup(pcData)
	if err != nil {
		return nil, fmt.Errorf("reading own cgroup: %w", err)
	}
	miData, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	mounts, err := parseMountinfo(miData)
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	switch cgroups.Mode() {
	case cgroups.Unified:
		if !pc.HasUnified {
			return nil, fmt.Errorf("opening cgroup v2: no 0:: line in /proc/self/cgroup: %w", ErrUnsupported)
		}
		i := slices.IndexFunc(mounts, func(m mount) bool { return m.Type == "cgroup2" && m.Point == v2Mountpoint })
		if i < 0 {
			return nil, fmt.Errorf("opening cgroup v2: %s not in /proc/self/mountinfo: %w", v2Mountpoint, ErrUnsupported)
		}
		return kept(openV2(mounts[i], pc.Unified, subtree, true))
	case cgroups.Legacy, cgroups.Hybrid:
		return kept(openV1(mounts, pc, subtree))
	default:
		return nil, fmt.Errorf("opening cgroups: nothing mounted at %s: %w", v2Mountpoint, ErrUnsupported)
	}
}

func openV1(mounts []mount, pc procCgroup, subtree string) (*Manager, error) {
	m := &Manager{version: V1, subtree: subtree, pageSize: int64(os.Getpagesize())}
	for _, name := range v1Controllers {
		i := slices.IndexFunc(mounts, func(mt mount) bool { return mt.Type == "cgroup" && slices.Contains(mt.Controllers, name) })
		path, inProc := pc.V1[name]
		if i < 0 || !inProc {
			if name == "memory" {
				return nil, fmt.Errorf("opening cgroup v1: no memory controller (no v1 hierarchy with memory is mounted, e.g. at /sys/fs/cgroup/memory): %w", ErrNoController)
			}
			continue
		}
		own, err := cgroupDir(mounts[i], path)
		if err != nil {
			return nil, fmt.Errorf("opening cgroup v1 %s: %w", name, err)
		}
		c := v1ctrl{name: name, mount: mounts[i].Point, own: own, base: filepath.Join(own, subtree)}
		if c.rel, err = subsystemPath(c.mount, name, c.base); err != nil {
			return nil, fmt.Errorf("opening cgroup v1 %s: %w", name, err)
		}
		if err := mkdirSubtree(c.base); err != nil {
			return nil, fmt.Errorf("opening cgroup v1 %s: %w", name, err)
		}
		m.ctrls = append(m.ctrls, c)
	}
	for _, c := range m.ctrls {
		switch c.name {
		case "memory":
			m.feat.memory = true
			m.feat.memsw = exists(filepath.Join(c.base, "memory.memsw.limit_in_bytes"))
			m.feat.kmemTCP = exists(filepath.Join(c.base, "memory.kmem.tcp.limit_in_bytes"))
		case "pids":
			m.feat.pids = true
			m.feat.pidsPeak = exists(filepath.Join(c.base, "pids.peak"))
		case "cpu":
			m.feat.cpu = true
		case "cpuacct":
			m.feat.cpuacct = true
		}
	}
	// The containerd hierarchy: exactly these controllers, each rooted so
	// that <root>/<name> + path is the directory we computed.
	var subs []cgroup1.Subsystem
	for _, c := range m.ctrls {
		root := filepath.Dir(c.mount)
		switch c.name {
		case "memory":
			subs = append(subs, cgroup1.NewMemory(root))
		case "pids":
			subs = append(subs, cgroup1.NewPids(root))
		case "cpu":
			subs = append(subs, cgroup1.NewCpu(root))
		case "cpuacct":
			subs = append(subs, cgroup1.NewCpuacct(root))
		}
	}
	m.v1hier = func() ([]cgroup1.Subsystem, error) { return subs, nil }
	return m, nil
}

// kept is m with its bases kept open (keepBases), or err.
func kept(m *Manager, err error) (*Manager, error) {
	if err != nil {
		return nil, err
	}
	m.keepBases()
	return m, nil
}

// v1path is the containerd Path of the jail group name.
func (m *Manager) v1path(name string) cgroup1.Path {
	return func(n cgroup1.Name) (string, error) {
		for _, c := range m.ctrls {
			if c.name == string(n) {
				return c.rel + "/" + name, nil
			}
		}
		return "", cgroup1.ErrControllerNotActive
	}
}

// mkdirSubtree creates the subtree directory, saying plainly when the
// hierarchy is not writable.
func mkdirSubtree(dir string) error {
	err := os.Mkdir(dir, 0o755)
	switch {
	case err == nil, errors.Is(err, os.ErrExist):
		return nil
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM), errors.Is(err, unix.EROFS):
		return fmt.Errorf("creating %s: %v: %w (run as root, or in a delegated cgroup)", dir, err, ErrNotWritable)
	}
	return fmt.Errorf("creating %s: %w", dir, err)
}

// openV2 prepares /X/<subtree> where /X is ownPath, our cgroup in the
// unified hierarchy mounted at mnt. requireMemory is false only in tests
// of the v2 mechanics on a hybrid host's controller-less unified mount.
func openV2(mnt mount, ownPath, subtree string, requireMemory bool) (*Manager, error) {
	if subtree == supervisorName {
		return nil, fmt.Errorf("opening cgroup v2 subtree %q: reserved for this process's leaf: %w", subtree, ErrInvalidName)
	}
	// A process that already moved itself (an earlier Open) lives in
	// /X/supervisor: its jails still go below /X.
	if filepath.Base(ownPath) == supervisorName && ownPath != "/" {
		ownPath = filepath.Dir(ownPath)
	}
	own, err := cgroupDir(mnt, ownPath)
	if err != nil {
		return nil, fmt.Errorf("opening cgroup v2: %w", err)
	}
	m := &Manager{version: V2, subtree: subtree, pageSize: int64(os.Getpagesize()),
		mount: mnt.Point, favor: mnt.FavorDynmods, v2own: own, v2base: filepath.Join(own, subtree)}

	if m.v2ctrls, err = v2ControllersOf(own, ownPath, requireMemory); err != nil {
		return nil, err
	}
	if err := leaveOwnCgroup(own, ownPath); err != nil {
		return nil, err
	}
	enable := []byte("+" + strings.Join(m.v2ctrls, " +"))
	if len(m.v2ctrls) > 0 {
		if err := writeSubtreeControl(own, enable); err != nil {
			return nil, fmt.Errorf("opening cgroup v2: %w", err)
		}
	}
	if err := mkdirSubtree(m.v2base); err != nil {
		return nil, fmt.Errorf("opening cgroup v2: %w", err)
	}
	if len(m.v2ctrls) > 0 {
		if err := writeSubtreeControl(m.v2base, enable); err != nil {
			return nil, fmt.Errorf("opening cgroup v2: %w", err)
		}
	}
	m.probeV2()
	return m, nil
}

// v2ControllersOf is the controllers of v2Controllers that own (ownPath in
// the hierarchy) has; without memory it fails when requireMemory.
func v2ControllersOf(own, ownPath string, requireMemory bool) ([]string, error) {
	ctrlData, err := os.ReadFile(filepath.Join(own, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("opening cgroup v2: reading controllers of %s: %w", own, err)
	}
	avail := strings.Fields(string(ctrlData))
	var ctrls []string
	for _, c := range v2Controllers {
		if slices.Contains(avail, c) {
			ctrls = append(ctrls, c)
		}
	}
	if requireMemory && !slices.Contains(ctrls, "memory") {
		return nil, fmt.Errorf("opening cgroup v2: the memory controller is not available in %s (cgroup.controllers: %q); "+
			"run agentjail in a cgroup delegated to it, e.g. `systemd-run --scope -p Delegate=yes agentjail ...` or the systemd service (Delegate=yes): %w",
			ownPath, strings.TrimSpace(string(ctrlData)), ErrNoController)
	}
	return ctrls, nil
}

// leaveOwnCgroup keeps the no-internal-processes rule: /X (own, ownPath
// in the hierarchy) may only enable controllers for its children once no
// process lives in /X itself. It moves this process to the leaf
// /X/supervisor and refuses if anyone else lives in /X.
func leaveOwnCgroup(own, ownPath string) error {
	procsData, err := os.ReadFile(filepath.Join(own, "cgroup.procs"))
	if err != nil {
		return fmt.Errorf("opening cgroup v2: reading processes of %s: %w", own, err)
	}
	procs, err := parsePids(procsData)
	if err != nil {
		return fmt.Errorf("opening cgroup v2: reading processes of %s: %w", own, err)
	}
	self := os.Getpid()
	var others []string
	inOwn := false
	for _, p := range procs {
		if p == self {
			inOwn = true
		} else {
			others = append(others, fmt.Sprint(p))
		}
	}
	if len(others) > 0 {
		return fmt.Errorf("opening cgroup v2: our cgroup %s also holds processes %s, so no group can be created below it "+
			"(cgroup v2 allows no processes in a group whose children have controllers); run agentjail in a cgroup of its own, "+
			"e.g. `systemd-run --scope -p Delegate=yes agentjail ...` or the systemd service (Delegate=yes): %w",
			ownPath, strings.Join(others, " "), ErrOwnCgroupBusy)
	}
	if inOwn {
		sup := filepath.Join(own, supervisorName)
		if err := mkdirSubtree(sup); err != nil {
			return fmt.Errorf("opening cgroup v2: %w", err)
		}
		if err := writeProcs(filepath.Join(sup, "cgroup.procs"), self); err != nil {
			return fmt.Errorf("opening cgroup v2: moving this process to %s: %w", sup, notWritable(err))
		}
	}
	return nil
}

// probeV2 sets m.feat: its controllers, and, probed in the subtree (a
// non-root group with the same controllers as the jails), which
// interface files this kernel has.
func (m *Manager) probeV2() {
	for _, c := range m.v2ctrls {
		switch c {
		case "memory":
			m.feat.memory = true
		case "pids":
			m.feat.pids = true
		case "cpu":
			m.feat.cpu = true
		}
	}
	m.feat.cpuacct = true // cpu.stat usage_usec is a core file on v2
	b := m.v2base
	m.feat.swapMax = exists(filepath.Join(b, "memory.swap.max"))
	m.feat.oomGroup = exists(filepath.Join(b, "memory.oom.group"))
	m.feat.peak = exists(filepath.Join(b, "memory.peak"))
	m.feat.peakReset = m.feat.peak && writable(filepath.Join(b, "memory.peak"))
	m.feat.pidsPeak = exists(filepath.Join(b, "pids.peak"))
	m.feat.kill = exists(filepath.Join(b, "cgroup.kill"))
}

func writeSubtreeControl(dir string, enable []byte) error {
	p := filepath.Join(dir, "cgroup.subtree_control")
	err := writeFile(p, enable)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EBUSY):
		return fmt.Errorf("enabling %s in %s: %v: processes live in %s: %w", enable, p, err, dir, ErrOwnCgroupBusy)
	}
	return fmt.Errorf("enabling %s in %s: %w", enable, p, notWritable(err))
}

// notWritable adds ErrNotWritable to permission errors.
func notWritable(err error) error {
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EROFS) {
		return fmt.Errorf("%v: %w", err, ErrNotWritable)
	}
	return err
}

// AttachWaits reports whether moving a jail into its group takes the
// kernel's global cgroup migration lock in its slow mode, whose every
// writer after a quiet spell waits an RCU grace period (several ms): on v2
// without favordynmods (Group.Attach writes cgroup.procs). On v1 a jail's
// thread moves itself (Group.JoinFiles), which kernels with the
// single-thread migration optimisation (commit 9a3284fad42f) do without
// that lock.
func (m *Manager) AttachWaits() bool { return m.version == V2 && !m.favor }

// Version is the cgroup version in use.
func (m *Manager) Version() Version { return m.version }

// Controllers lists which of memory, pids, cpu (and cpuacct on v1) jail
// groups get, for `agentjail check`.
func (m *Manager) Controllers() []string {
	if m.version == V2 {
		return slices.Clone(m.v2ctrls)
	}
	out := make([]string, 0, len(m.ctrls))
	for _, c := range m.ctrls {
		out = append(out, c.name)
	}
	return out
}

// groupDirs returns the directories of jail group name: v1 one per
// hierarchy (deduplicated for co-mounted controllers), v2 one.
func (m *Manager) groupDirs(name string) []string {
	if m.version == V2 {
		return []string{filepath.Join(m.v2base, name)}
	}
	var dirs []string
	for _, c := range m.ctrls {
		d := filepath.Join(c.base, name)
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// ctrlDir is the directory of group name in controller c ("" if absent).
func (m *Manager) ctrlDir(c, name string) string {
	if m.version == V2 {
		return filepath.Join(m.v2base, name)
	}
	for _, ct := range m.ctrls {
		if ct.name == c {
			return filepath.Join(ct.base, name)
		}
	}
	return ""
}

// Stale returns the names of the groups in the subtree that no live Group
// holds: leftovers of a crashed process, for start-up clean-up. Groups of
// other live processes sharing the subtree (on v1 the pids, cpu and
// cpuacct hierarchies are often "/" for every process, while the memory
// cgroups differ) are not reported: each Group holds an flock on each of
// its directories, which the kernel drops when its process dies.
func (m *Manager) Stale() ([]string, error) {
	var bases []string
	if m.version == V2 {
		bases = []string{m.v2base}
	} else {
		for _, c := range m.ctrls {
			bases = append(bases, c.base)
		}
	}
	seen := map[string]bool{}
	for _, b := range bases {
		ents, err := os.ReadDir(b)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("listing stale groups in %s: %w", b, err)
		}
		for _, e := range ents {
			if e.IsDir() && validName(e.Name()) == nil {
				seen[e.Name()] = true
			}
		}
	}
	var out []string
	for name := range seen {
		fds, err := lockDirs(m.groupDirs(name))
		switch {
		case err == nil:
			unlockDirs(fds)
		case errors.Is(err, ErrGroupBusy):
			continue
		default:
			return nil, fmt.Errorf("listing stale groups: %w", err)
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out, nil
}

// Remove kills everything in a stale group and deletes it in every
// hierarchy. It refuses (ErrGroupBusy) a group a live Group holds. A group
// that does not exist is not an error.
func (m *Manager) Remove(name string) error {
	if err := validName(name); err != nil {
		return fmt.Errorf("removing group: %w", err)
	}
	dirs := m.groupDirs(name)
	fds, err := lockDirs(dirs)
	if err != nil {
		return fmt.Errorf("removing group %s: %w", name, err)
	}
	defer unlockDirs(fds)
	m.unthrottle(name) // an idle session's group, left by a daemon that died
	deadline := time.Now().Add(deleteTimeout)
	for _, d := range dirs {
		if err := m.killAndWait(d, deadline); err != nil {
			return fmt.Errorf("removing group %s: %w", name, err)
		}
	}
	// Empty now: let containerd delete it (it re-checks for processes).
	if m.version == V2 {
		rel := strings.TrimPrefix(dirs[0], m.mount)
		if err := deleteV2(m.mount, rel); err != nil {
			return fmt.Errorf("removing group %s: %w", name, err)
		}
		return nil
	}
	cg, err := cgroup1.Load(m.v1path(name), cgroup1.WithHierarchy(m.v1hier))
	if errors.Is(err, cgroup1.ErrCgroupDeleted) {
		return nil
	}
	if err == nil {
		err = cg.Delete()
	}
	if err != nil {
		return fmt.Errorf("removing group %s: %w", name, err)
	}
	return nil
}

// killAndWait SIGKILLs the processes of the group at dir until it is
// empty or the deadline passes. A missing directory is empty.
func (m *Manager) killAndWait(dir string, deadline time.Time) error {
	backoff := 50 * time.Microsecond
	for {
		pids, err := readProcs(dir)
		if errors.Is(err, unix.ENOENT) || err == nil && len(pids) == 0 {
			return nil
		}
		if err != nil {
			return fmt.Errorf("listing processes of %s: %w", dir, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("killing processes %v of %s: %w", pids, dir, ErrNotEmpty)
		}
		m.signalGroup(dir, pids)
		time.Sleep(backoff)
		backoff = min(2*backoff, 20*time.Millisecond)
	}
}

// signalGroup SIGKILLs the group at dir: v2 cgroup.kill (the kernel also
// stops concurrent forks), else each pid listed.
func (m *Manager) signalGroup(dir string, pids []int) {
	if m.version == V2 && m.feat.kill {
		if err := writeFile(filepath.Join(dir, "cgroup.kill"), []byte("1")); err == nil {
			return
		}
	}
	for _, p := range pids {
		if p > 0 {
			unix.Kill(p, unix.SIGKILL)
		}
	}
}

// readProcs lists cgroup.procs of dir.
func readProcs(dir string) ([]int, error) {
	var b [smallBuf]byte
	data, err := readFile(filepath.Join(dir, "cgroup.procs"), b[:])
	if err != nil {
		return nil, err
	}
	return parsePids(data)
}
