// Package systest is the one skip helper of agentjail's tests: a test that
// needs root, a cgroup controller or a kernel feature says so with Require,
// and is skipped with the reason where the host lacks it. CI runs as root on
// a host that has everything, so there every such test runs; set
// AGENTJAIL_REQUIRE_ALL=1 to turn every skip into a failure.
//
// It also holds the host-side checks that docs/security.md A.4 asks for after
// every case: no process left under a jail's host uid, no jail cgroup, no
// mount.
package systest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Need is one requirement of a test.
type Need string

const (
	Root      Need = "root"
	UserNS    Need = "user namespaces"
	CgroupMem Need = "a writable memory cgroup controller"
	Seccomp   Need = "seccomp user notification"
	Python    Need = "/usr/bin/python3"
	KVM       Need = "/dev/kvm"
	// Scientific is Debian's python3-numpy, python3-pandas and
	// python3-matplotlib (scripts/deps --scientific installs them).
	Scientific Need = "python3-numpy, python3-pandas and python3-matplotlib"
	MultiCPU   Need = "at least 2 CPUs"
	CC         Need = "a C compiler (gcc)"
	// MuslCC is musl-gcc (Debian's musl-tools), which builds the standalone
	// init (nsjail/boot/standalone/build).
	MuslCC Need = "musl-gcc (musl-tools: scripts/deps)"
	Node   Need = "node and npm (scripts/deps installs Debian's nodejs and npm)"
	// CPythonTests is CPython's own test suite for /usr/bin/python3
	// (Debian's libpython3.11-testsuite; scripts/deps installs it).
	CPythonTests Need = "CPython's test suite (libpython3.11-testsuite)"
	// NetNS is ip (iproute2) and nsenter, which the egress tests' own
	// network (internal/networld) is made and entered with.
	NetNS Need = "ip (iproute2) and nsenter"
	// Pip and Requests are Debian's python3-pip and python3-requests, the
	// egress tests' real clients (scripts/deps --test installs them).
	Pip      Need = "Debian's python3-pip"
	Requests Need = "Debian's python3-requests"
	// StandaloneInit is the standalone init, embedded in the test binary
	// and built from its C: scripts/build (which scripts/test runs before
	// go test) builds it. nsjail's tests probe it (Probe).
	StandaloneInit Need = "the standalone init, built from this C (scripts/build, then go test)"
	// ZygoteLoop is the zygotes' fork loop, embedded in the test binary
	// and built from its loop.c, as StandaloneInit (nsjail/zygoteloop).
	ZygoteLoop Need = "the zygote loop, built from this loop.c (scripts/build, then go test)"
)

// probes are the needs only a package that sees them can check (Probe).
var probes = map[Need]func() string{}

// Probe sets how Require checks n: f returns why n is missing, or "".
// For needs a package of its own must look at; call it from an init.
func Probe(n Need, f func() string) { probes[n] = f }

// Require skips t (or fails it under AGENTJAIL_REQUIRE_ALL=1) unless the
// host has every need.
func Require(t testing.TB, needs ...Need) {
	t.Helper()
	for _, n := range needs {
		if why := missing(n); why != "" {
			if os.Getenv("AGENTJAIL_REQUIRE_ALL") == "1" {
				t.Fatalf("needs %s: %s (AGENTJAIL_REQUIRE_ALL=1)", n, why)
			}
			t.Skipf("needs %s: %s", n, why)
		}
	}
}

func missing(n Need) string {
	if f, ok := probes[n]; ok {
		return f()
	}
	switch n {
	case Root:
		if os.Geteuid() != 0 {
			return "not running as root"
		}
	case UserNS:
		b, err := os.ReadFile("/proc/sys/user/max_user_namespaces")
		if err != nil || strings.TrimSpace(string(b)) == "0" {
			return "user namespaces are disabled (user.max_user_namespaces)"
		}
	case CgroupMem:
		for _, p := range []string{"/sys/fs/cgroup/memory/cgroup.procs", "/sys/fs/cgroup/cgroup.controllers"} {
			if b, err := os.ReadFile(p); err == nil && (strings.HasSuffix(p, "procs") || bytes.Contains(b, []byte("memory"))) {
				return ""
			}
		}
		return "no memory controller on cgroup v1 or v2"
	case Seccomp:
		b, err := os.ReadFile("/proc/sys/kernel/seccomp/actions_avail")
		if err != nil || !bytes.Contains(b, []byte("user_notif")) {
			return "the kernel has no seccomp user notification"
		}
	case Python:
		if _, err := os.Stat("/usr/bin/python3"); err != nil {
			return err.Error()
		}
	case CC:
		if _, err := exec.LookPath("gcc"); err != nil {
			return err.Error()
		}
	case MuslCC:
		if _, err := exec.LookPath("musl-gcc"); err != nil {
			return err.Error()
		}
	case Node:
		for _, c := range []string{"node", "npm"} {
			if _, err := exec.LookPath(c); err != nil {
				return err.Error()
			}
		}
	case CPythonTests:
		if _, err := os.Stat("/usr/lib/python3.11/test/test_pty.py"); err != nil {
			return "Debian's libpython3.11-testsuite is not installed (scripts/deps)"
		}
	case NetNS:
		for _, c := range []string{"ip", "nsenter"} {
			if _, err := exec.LookPath(c); err != nil {
				return err.Error()
			}
		}
	case Pip, Requests:
		m := map[Need]string{Pip: "pip", Requests: "requests"}[n]
		if _, err := os.Stat("/usr/lib/python3/dist-packages/" + m); err != nil {
			return "Debian's python3-" + m + " is not installed (scripts/deps --test)"
		}
	case MultiCPU:
		if runtime.NumCPU() < 2 {
			return "this host has 1 CPU"
		}
	case Scientific:
		for _, m := range []string{"numpy", "pandas", "matplotlib"} {
			if _, err := os.Stat("/usr/lib/python3/dist-packages/" + m); err != nil {
				return "Debian's python3-" + m + " is not installed (scripts/deps --scientific)"
			}
		}
	case KVM:
		if _, err := os.Stat("/dev/kvm"); err != nil {
			return err.Error()
		}
	case StandaloneInit, ZygoteLoop:
		return "no package of this test binary probes it (systest.Probe)"
	}
	return ""
}

// CgroupV2 says whether /sys/fs/cgroup is the unified (v2) hierarchy.
func CgroupV2() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err == nil
}

// ProcessesOf lists the pids of host processes whose real uid is uid.
func ProcessesOf(uid uint32) []int { return ProcessesInRange(uid, 1) }

// ProcessesInRange lists the pids of host processes whose real uid is in
// [base, base+size). A zombie whose parent is the host's init is left
// out: it is dead, holds nothing but its pid, and is init's to reap (a
// jail's init whose daemon was killed ends so; some hosts' inits reap
// late).
func ProcessesInRange(base, size uint32) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		in, orphanZombie := false, false
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			switch {
			case len(f) > 1 && f[0] == "Uid:":
				u, err := strconv.ParseUint(f[1], 10, 32)
				in = err == nil && u >= uint64(base) && u < uint64(base)+uint64(size)
			case len(f) > 1 && f[0] == "State:" && f[1] == "Z":
				orphanZombie = true
			case len(f) > 1 && f[0] == "PPid:":
				orphanZombie = orphanZombie && f[1] == "1"
			}
		}
		if in && !orphanZombie {
			pids = append(pids, pid)
		}
	}
	return pids
}

// CgroupDirs lists the directories named name anywhere under /sys/fs/cgroup.
func CgroupDirs(name string) []string {
	var found []string
	_ = filepath.WalkDir("/sys/fs/cgroup", func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if d.Name() == name {
			found = append(found, p)
		}
		return nil
	})
	return found
}

// StateDir is agentjail's state directory: the jails' root mount point
// (nsjail.DefaultRootDir) and the daemon's socket are below it. Every
// mount agentjail makes in the host's mount namespace would be there.
const StateDir = "/run/agentjail"

// MountCount is the number of agentjail's mounts in this process's mount
// namespace: those at or below StateDir. Other mounts are not counted:
// on a shared host (a Kubernetes node, a CI runner) other tenants mount
// and unmount at any time.
func MountCount() int { return len(Mounts()) }

// Mounts lists agentjail's mounts in this process's mount namespace (the
// lines of /proc/self/mountinfo that AgentjailMounts keeps).
func Mounts() []string {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	return AgentjailMounts(b)
}

// AgentjailMounts keeps the lines of a mountinfo file whose mount point is
// StateDir or below it.
func AgentjailMounts(mountinfo []byte) []string {
	var out []string
	for _, l := range strings.Split(string(mountinfo), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 {
			continue
		}
		// Field 5 is the mount point, with space, tab, newline and
		// backslash written as octal escapes.
		if p := unescapeMountinfo(f[4]); p == StateDir || strings.HasPrefix(p, StateDir+"/") {
			out = append(out, l)
		}
	}
	return out
}

func unescapeMountinfo(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// NoLeftovers fails t when a jail that ran as hostUID under the cgroup name
// left a process, a cgroup directory or a mount behind (mountsBefore is
// MountCount before the run). It looks only at what agentjail makes: the
// jail's uid, its cgroup's name and the mounts below StateDir, so that
// other tenants of the host cannot fail it. Processes get a short grace
// to finish exiting.
func NoLeftovers(t testing.TB, hostUID uint32, cgroupName string, mountsBefore int) {
	t.Helper()
	if hostUID == 0 || cgroupName == "" {
		t.Errorf("no jail to look for (uid %d, cgroup %q): the check would pass whatever was left", hostUID, cgroupName)
	}
	deadline := time.Now().Add(2 * time.Second)
	for len(ProcessesOf(hostUID)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if p := ProcessesOf(hostUID); len(p) > 0 {
		t.Errorf("processes of jail uid %d left behind: %v", hostUID, p)
	}
	if d := CgroupDirs(cgroupName); len(d) > 0 {
		t.Errorf("cgroup directories left behind: %v", d)
	}
	if m := Mounts(); len(m) != mountsBefore {
		t.Errorf("agentjail's mounts (below %s) went from %d to %d; now:\n%s", StateDir, mountsBefore, len(m), strings.Join(m, "\n"))
	}
}

// FilesOf lists the files and directories below dirs (at most depth
// levels down) owned by the host uid: what a jail running as uid left on
// a host file system. Unreadable directories are skipped.
func FilesOf(uid uint32, depth int, dirs ...string) []string {
	var found []string
	for _, dir := range dirs {
		base := strings.Count(filepath.Clean(dir), "/")
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if info, err := d.Info(); err == nil {
				if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Uid == uid {
					found = append(found, p)
				}
			}
			if d.IsDir() && strings.Count(p, "/")-base >= depth {
				return filepath.SkipDir
			}
			return nil
		})
	}
	return found
}

// SelfCPU is this process's CPU time so far (utime+stime; children not
// counted), for benchmarks' CPU per operation.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Children are the pids of process pid's children (every thread's: a
// child made with CLONE_PARENT by a locked thread is that thread's).
func Children(pid int) []int {
	var kids []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, w := range strings.Fields(string(b)) {
			if k, err := strconv.Atoi(w); err == nil {
				kids = append(kids, k)
			}
		}
	}
	return kids
}

// Running: process pid exists and has not ended (a zombie, ended but not
// yet waited for, is not running).
func Running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// FdCount is the number of this process's open fds.
func FdCount() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	return len(ents)
}

// SelfRSS is this process's resident memory in bytes (VmRSS), -1 when
// unknown.
func SelfRSS() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return -1
}
