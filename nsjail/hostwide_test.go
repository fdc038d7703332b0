package nsjail

// Host-wide resources (issue 21): what one jail can take from the host or
// from the other jails outside its own limits. Each test runs a program in a
// jail through the Runner and, where the resource is visible from here,
// reads the host's counter while the jail holds what it could take. The
// decisions are in seccomp/doc.go ("Host-wide resources"); the tests named
// there as waiting for nsjail (TestHostwideForeignABI,
// TestHostwideNotificationBudget, TestHostwideSignalQueue,
// TestHostwideTCPMemory) fail until it does its part.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"agentjail/internal/systest"
	"agentjail/seccomp"
)

// hwPrelude gives the snippets a raw system call: sc(nr, *args) returns
// "OK:<ret>" or the errno's name.
const hwPrelude = `import ctypes, errno, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def _a(x): return ctypes.c_long(x) if isinstance(x, int) else x
def sc(nr, *args):
    r = libc.syscall(_a(nr), *map(_a, args))
    return f"OK:{r}" if r != -1 else errno.errorcode.get(ctypes.get_errno(), "?")
`

// hwLines maps the first word of each output line to the rest.
func hwLines(t *testing.T, res *Result) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		k, v, _ := strings.Cut(l, " ")
		m[k] = v
	}
	return m
}

// hwCount is how often the report counts the native call name.
func hwCount(res *Result, name string) int {
	if res.Seccomp == nil {
		return 0
	}
	n := 0 // a call with several details is several entries
	for _, c := range res.Seccomp.Calls {
		if c.Syscall == name && c.ABI == "" {
			n += c.Count
		}
	}
	return n
}

// hwWhile runs code in a jail and calls sample every few milliseconds
// until the jail has ended; it returns the result after the usual host
// checks (no process, cgroup or mount left).
func hwWhile(t *testing.T, code string, mod func(*Spec), sample func()) *Result {
	t.Helper()
	r := testRunner(t)
	s := &Spec{Program: []byte(code), Limits: DefaultLimits(), ID: NewID()}
	if mod != nil {
		mod(s)
	}
	mounts := systest.MountCount()
	type answer struct {
		res *Result
		err error
	}
	done := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := r.Run(ctx, s)
		done <- answer{res, err}
	}()
	var a answer
	for tick := time.NewTicker(3 * time.Millisecond); ; {
		sample()
		select {
		case a = <-done:
			tick.Stop()
		case <-tick.C:
			continue
		}
		break
	}
	require.NoError(t, a.err)
	require.NotNil(t, a.res)
	systest.NoLeftovers(t, a.res.HostUID, s.ID, mounts)
	if t.Failed() || testing.Verbose() {
		t.Logf("status=%s exit=%d reason=%q wall=%v cpu=%v peak=%d\nstdout: %s\nstderr: %s",
			a.res.Status, a.res.ExitCode, string(a.res.KillReason), a.res.WallTime, a.res.CPUTime, a.res.PeakMemoryBytes,
			trim(a.res.Stdout), trim(a.res.Stderr))
	}
	return a.res
}

func hwReadInt(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	v, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
	require.NoError(t, err)
	return v
}

// TestHostwideAIO: Linux AIO contexts count against fs.aio-max-nr, one
// number for the whole host; 16 × io_setup(4096) took all of it (65536).
// Every AIO call is refused (EPERM, reported) and aio-nr does not move.
func TestHostwideAIO(t *testing.T) {
	systest.Require(t, systest.Root)
	base := hwReadInt(t, "/proc/sys/fs/aio-nr")
	peak := base
	res := hwWhile(t, hwPrelude+`
ctx = [ctypes.c_ulong(0) for _ in range(16)]
print("io_setup", " ".join(sc(206, 4096, ctypes.byref(c)) for c in ctx), flush=True)
print("io_submit", sc(209, 0, 1, None))
print("io_destroy", sc(207, 0))
time.sleep(0.3)
`, nil, func() {
		if v := hwReadInt(t, "/proc/sys/fs/aio-nr"); v > peak {
			peak = v
		}
	})
	require.Equal(t, StatusOK, res.Status)
	out := hwLines(t, res)
	assert.Equal(t, strings.TrimSpace(strings.Repeat("EPERM ", 16)), out["io_setup"])
	assert.Equal(t, "EPERM", out["io_submit"])
	assert.Equal(t, "EPERM", out["io_destroy"])
	assert.Equal(t, 16, hwCount(res, "io_setup"), "each refusal is reported")
	assert.Less(t, peak-base, int64(4096), "fs.aio-nr rose from %d to %d during the run", base, peak)
}

// diskFlushes returns the "flush requests completed" counter of the block
// device that holds path (field 16 of /proc/diskstats, Linux 5.5+), and the
// device's name; "" when path is not on a block device (overlay, tmpfs).
func diskFlushes(t *testing.T, path string) (int64, string) {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Stat(path, &st))
	dev := fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	real, err := filepath.EvalSymlinks(dev)
	if err != nil {
		return 0, ""
	}
	if _, err := os.Stat(filepath.Join(real, "partition")); err == nil {
		real = filepath.Dir(real) // a partition: the disk flushes
	}
	name := filepath.Base(real)
	b, err := os.ReadFile("/proc/diskstats")
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 2 && f[2] == name {
			require.GreaterOrEqual(t, len(f), 19, "diskstats without the flush fields (Linux < 5.5): %s", l)
			v, err := strconv.ParseInt(f[18], 10, 64)
			require.NoError(t, err)
			return v, name
		}
	}
	return 0, ""
}

// TestHostwideDiskFlush: fsync, fdatasync, syncfs (and sync_file_range,
// msync MS_SYNC) on a read-only /usr file sent the host disk one cache
// flush per call. They now return 0 without running: the host disk's flush
// counter does not follow the jail's 5000 calls, a bad descriptor gets 0
// instead of EBADF (the call never ran), and sync stays refused. The host
// part is calibrated: the same calls from this process do move the counter.
func TestHostwideDiskFlush(t *testing.T) {
	systest.Require(t, systest.Root)
	target := "/usr/lib/os-release"
	if _, err := os.Stat(target); err != nil {
		target = "/usr/bin/python3"
	}
	target, err := filepath.EvalSymlinks(target)
	require.NoError(t, err)
	before, disk := diskFlushes(t, target)
	if disk != "" {
		f, err := os.Open(target)
		require.NoError(t, err)
		for i := 0; i < 20; i++ {
			unix.Fsync(int(f.Fd()))
		}
		f.Close()
		after, _ := diskFlushes(t, target)
		t.Logf("%s: 20 fsyncs from the host moved %s's flush counter by %d", target, disk, after-before)
		if after-before < 10 {
			t.Logf("the counter does not follow fsync on this host: only the jail side is checked")
			disk = ""
		}
	} else {
		t.Logf("%s is not on a block device: only the jail side is checked", target)
	}

	start, _ := diskFlushes(t, target)
	res := jailRun(t, hwPrelude+fmt.Sprintf(`import mmap
fd = os.open(%q, os.O_RDONLY)
m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ)
rs = set()
for i in range(1000):
    rs.add(sc(74, fd)); rs.add(sc(75, fd)); rs.add(sc(306, fd)); rs.add(sc(277, fd, 0, 0, 7)); m.flush()
print("flushes", sorted(rs))
print("badfd", sc(74, -1), sc(75, -1), sc(306, -1), sc(277, -1, 0, 0, 2))
w = os.open("/tmp/f", os.O_CREAT | os.O_WRONLY); os.write(w, b"x")
print("tmpfs", sc(74, w))
print("sync", sc(162))
`, target), nil)
	end, _ := diskFlushes(t, target)
	require.Equal(t, StatusOK, res.Status)
	out := hwLines(t, res)
	assert.Equal(t, "['OK:0']", out["flushes"])
	assert.Equal(t, "OK:0 OK:0 OK:0 OK:0", out["badfd"], "EBADF would mean the call ran")
	assert.Equal(t, "OK:0", out["tmpfs"])
	assert.Equal(t, "EPERM", out["sync"])
	assert.Equal(t, 1, hwCount(res, "sync"))
	assert.Zero(t, hwCount(res, "fsync"), "a Succeed call is not a violation")
	if disk != "" {
		assert.Less(t, end-start, int64(100), "5000 flush calls moved %s's flush counter by %d", disk, end-start)
	}
}

// TestHostwideRefusedCalls: the calls refused for a host-wide quota or
// effect fail with EPERM and are reported. inotify instances, POSIX message
// queue bytes and SHM_LOCK count against the user namespace's owner (root,
// for every jail); huge pages come from the host's pool; membarrier's
// GLOBAL commands act on every CPU; the keyring, fanotify and userfaultfd
// were refused before. The private membarrier commands still work.
func TestHostwideRefusedCalls(t *testing.T) {
	res := jailRun(t, hwPrelude+`
print("inotify", sc(294, 0), sc(253))
print("mq_open", sc(240, b"q", os.O_CREAT | os.O_RDWR, 0o600, 0))
sid = int(sc(29, 0, 4096, 0o1000 | 0o600).split(":")[1])
print("shm_lock", sc(31, sid, 11, 0), sc(31, sid, 0, 0))
print("hugetlb", sc(9, 0, 2 << 20, 3, 0x22 | 0x40000, -1, 0), sc(319, b"x", 4), sc(29, 0, 2 << 20, 0o1000 | 0o4000 | 0o600))
print("membarrier_global", sc(324, 1, 0, 0), sc(324, 2, 0, 0), sc(324, 4, 0, 0))
print("membarrier_private", sc(324, 16, 0, 0), sc(324, 8, 0, 0))
print("keyring", sc(250, 0, -4, 0), sc(248, b"user", b"k", b"v", 1, -4))
print("fanotify", sc(300, 0, 0))
print("userfaultfd", sc(323, 0))
print("remap_file_pages", sc(216, 0, 4096, 0, 0, 0))
`, nil)
	require.Equal(t, StatusOK, res.Status)
	out := hwLines(t, res)
	for k, want := range map[string]string{
		"inotify":            "EPERM EPERM",
		"mq_open":            "EPERM",
		"shm_lock":           "EPERM OK:0",
		"hugetlb":            "EPERM EPERM EPERM",
		"membarrier_global":  "EPERM EPERM EPERM",
		"membarrier_private": "OK:0 OK:0",
		"keyring":            "EPERM EPERM",
		"fanotify":           "EPERM",
		"userfaultfd":        "EPERM",
		"remap_file_pages":   "EPERM",
	} {
		assert.Equal(t, want, out[k], k)
	}
	for name, n := range map[string]int{"inotify_init1": 1, "inotify_init": 1, "mq_open": 1, "shmctl": 1, "mmap": 1,
		"memfd_create": 1, "shmget": 1, "membarrier": 3, "keyctl": 1, "add_key": 1, "fanotify_init": 1, "userfaultfd": 1,
		"remap_file_pages": 1} {
		assert.Equal(t, n, hwCount(res, name), "reported count of %s", name)
	}
}

// TestHostwideNoHostReach: the calls a jail keeps reach nothing of the
// host's: a pidfd only for its own pid namespace (the daemon's pid is
// ESRCH there), /proc/sys read-only, no real-time or deadline scheduling,
// no negative nice, no real-time I/O class (no capability of the host).
func TestHostwideNoHostReach(t *testing.T) {
	res := jailRun(t, hwPrelude+fmt.Sprintf(`import struct
print("pidfd", sc(434, %d, 0), sc(434, 1, 0).startswith("OK:"))
def w(p):
    try:
        with open(p, "w") as f: f.write("1")
        return "OK"
    except OSError as e: return errno.errorcode[e.errno]
print("procsys", " ".join(w(p) for p in ("/proc/sys/kernel/hostname", "/proc/sys/net/ipv4/ip_forward",
      "/proc/sys/user/max_inotify_instances", "/proc/sys/fs/mqueue/queues_max", "/proc/sys/vm/drop_caches",
      "/proc/sys/kernel/ns_last_pid", "/proc/sys/fs/aio-max-nr")))
fifo = ctypes.create_string_buffer(struct.pack("IIQiiQQQ", 48, 1, 0, 0, 10, 0, 0, 0))
dl = ctypes.create_string_buffer(struct.pack("IIQiiQQQ", 48, 6, 0, 0, 0, 10**6, 10**7, 10**7))
idle = ctypes.create_string_buffer(struct.pack("IIQiiQQQ", 48, 5, 0, 0, 0, 0, 0, 0))
print("sched", sc(314, 0, fifo, 0), sc(314, 0, dl, 0), sc(314, 0, idle, 0))
print("nice", sc(141, 0, 0, -5), sc(141, 0, 0, 19))
print("ioprio", sc(251, 1, 0, 1 << 13), sc(251, 1, 0, 3 << 13))
`, os.Getpid()), nil)
	require.Equal(t, StatusOK, res.Status)
	out := hwLines(t, res)
	assert.Equal(t, "ESRCH True", out["pidfd"])
	assert.Equal(t, strings.TrimSpace(strings.Repeat("EROFS ", 7)), out["procsys"])
	assert.Equal(t, "EPERM EPERM OK:0", out["sched"], "SCHED_FIFO, SCHED_DEADLINE refused; SCHED_IDLE is a jail's own business")
	assert.Equal(t, "EACCES OK:0", out["nice"])
	assert.Equal(t, "EPERM OK:0", out["ioprio"], "IOPRIO_CLASS_RT refused; IDLE allowed")
	assert.Nil(t, res.Seccomp, "the kernel refused these, not the filter")
}

// TestHostwideMemoryIsTheJails: memory a jail can pin outside its
// address space is its cgroup's: tmpfs pages (and the tmpfs's own size),
// a memfd, mlocked pages (RLIMIT_MEMLOCK per process as well). A jail
// that asks for more than its limit fails or is killed for memory, and the
// host's locked memory is back afterwards.
func TestHostwideMemoryIsTheJails(t *testing.T) {
	meminfo := func(key string) int64 {
		b, err := os.ReadFile("/proc/meminfo")
		require.NoError(t, err)
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == key+":" {
				v, _ := strconv.ParseInt(f[1], 10, 64)
				return v << 10
			}
		}
		t.Fatalf("no %s in /proc/meminfo", key)
		return 0
	}
	t.Run("fallocate past the tmpfs size", func(t *testing.T) {
		res := jailRun(t, hwPrelude+`
fd = os.open("/tmp/big", os.O_CREAT | os.O_RDWR)
try: os.posix_fallocate(fd, 0, 32 << 20); print("fallocate OK")
except OSError as e: print("fallocate", errno.errorcode[e.errno])
`, func(s *Spec) { s.Limits.TmpBytes = 16 << 20; s.Limits.FileSizeBytes = 64 << 20 })
		require.Equal(t, StatusOK, res.Status)
		assert.Equal(t, "ENOSPC", hwLines(t, res)["fallocate"])
	})
	lockedBefore := meminfo("Mlocked")
	for _, tc := range []struct{ name, code string }{
		{"tmpfs pages past the memory limit", `
fd = os.open("/tmp/big", os.O_CREAT | os.O_RDWR)
try: os.posix_fallocate(fd, 0, 56 << 20); print("fallocate OK")
except OSError as e: print("fallocate", errno.errorcode[e.errno])
`},
		{"memfd past the memory limit", `
fd = os.memfd_create("x"); os.ftruncate(fd, 60 << 20)
for i in range(60): os.pwrite(fd, b"x" * (1 << 20), i << 20)
print("memfd OK")
`},
		{"mlock in many processes", `import mmap
for i in range(12):
    if os.fork() == 0:
        m = mmap.mmap(-1, 8 << 20); a = ctypes.addressof(ctypes.c_char.from_buffer(m))
        r = sc(149, a, 8 << 20)
        time.sleep(2); os._exit(0 if r == "OK:0" else 1)
codes = [os.waitstatus_to_exitcode(os.wait()[1]) for i in range(12)]
print("mlock", codes)
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := jailRun(t, hwPrelude+tc.code, func(s *Spec) {
				s.Limits.MemoryBytes = 32 << 20
				s.Limits.TmpBytes = 64 << 20
				s.Limits.FileSizeBytes = 64 << 20
			})
			out := string(res.Stdout)
			if res.Status != StatusKilled {
				// Not killed: the kernel refused the charge instead.
				assert.NotContains(t, out, " OK", "the jail got more than its memory limit")
				assert.NotContains(t, out, "[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]", "12 × 8 MiB locked under a 32 MiB limit")
			} else {
				assert.Equal(t, KillMemoryLimit, res.KillReason)
			}
			assert.LessOrEqual(t, res.PeakMemoryBytes, int64(32<<20))
		})
	}
	// Other processes of the host move it a little; the jail's 96 MiB would show.
	assert.Less(t, meminfo("Mlocked")-lockedBefore, int64(8<<20), "host Mlocked grew")
}

// TestHostwidePerUidCounters: pipe buffer pages and epoll watches are
// counted per host uid (user_struct), and every jail has its own: two jails
// at once each get the 64 one-MiB pipes that fs.pipe-user-pages-soft
// (16384 pages) allows, and the 65th fails. epoll watches are charged to
// the jail's memory cgroup as well (its peak grows with them).
func TestHostwidePerUidCounters(t *testing.T) {
	code := hwPrelude + `import fcntl
ps = []
for i in range(70):
    r, w = os.pipe()
    try: fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
    except OSError as e: print("pipes", i, errno.errorcode[e.errno], flush=True); break
    ps.append((r, w))
time.sleep(0.5)
`
	r := testRunner(t)
	var wg sync.WaitGroup
	outs := make([]*Result, 2)
	for i := range outs {
		wg.Go(func() {
			s := &Spec{Program: []byte(code), Limits: DefaultLimits(), ID: NewID()}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := r.Run(ctx, s)
			if err == nil {
				outs[i] = res
			}
		})
	}
	wg.Wait()
	for _, res := range outs {
		require.NotNil(t, res)
		assert.Equal(t, "64 EPERM", hwLines(t, res)["pipes"], "stdout %s stderr %s", res.Stdout, res.Stderr)
	}
	require.NotEqual(t, outs[0].HostUID, outs[1].HostUID)

	epoll := func(watches bool) *Result {
		return jailRun(t, hwPrelude+fmt.Sprintf(`import select
for i in range(4):
    if os.fork() == 0:
        fds = []
        for _ in range(120):
            r, w = os.pipe(); os.close(w); fds.append(r)
        eps = [select.epoll() for _ in range(120)]
        if %v:
            for e in eps:
                for f in fds: e.register(f, select.EPOLLIN)
        time.sleep(0.3); os._exit(0)
for i in range(4): os.wait()
print("epoll done")
`, map[bool]string{true: "True", false: "False"}[watches]), nil)
	}
	with, without := epoll(true), epoll(false)
	require.Equal(t, StatusOK, with.Status)
	require.Equal(t, StatusOK, without.Status)
	// 4 processes × 120 × 120 = 57,600 watches.
	t.Logf("peak with watches %d, without %d", with.PeakMemoryBytes, without.PeakMemoryBytes)
	assert.Greater(t, with.PeakMemoryBytes-without.PeakMemoryBytes, int64(2<<20), "epoll watches are not the jail's memory")
}

// TestHostwideFlock documents a bound, not a refusal: flock(2) works on any
// file a jail can open, the host's read-only /usr files included, so a host
// process that flocks the same file waits while the jail holds it. The
// lock goes with the jail (its wall limit bounds it); nothing of
// agentjail's or Debian's flocks files under /usr.
func TestHostwideFlock(t *testing.T) {
	systest.Require(t, systest.Root)
	target, err := filepath.EvalSymlinks("/usr/bin/python3")
	require.NoError(t, err)
	f, err := os.Open(target)
	require.NoError(t, err)
	defer f.Close()
	blocked := false
	res := hwWhile(t, hwPrelude+fmt.Sprintf(`import fcntl
f = open(%q, "rb"); fcntl.flock(f, fcntl.LOCK_EX); print("locked", flush=True); time.sleep(1)
`, target), nil, func() {
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err == unix.EWOULDBLOCK {
			blocked = true
		} else if err == nil {
			unix.Flock(int(f.Fd()), unix.LOCK_UN)
		}
	})
	require.Equal(t, StatusOK, res.Status)
	assert.True(t, blocked, "the jail's flock was not seen: the test proves nothing")
	require.NoError(t, unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB), "the lock outlived the jail")
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
}

// maxSignalShare: one jail may take at most 1/maxSignalShare of the host
// root's RLIMIT_SIGPENDING (TestHostwideSignalQueue).
const maxSignalShare = 16

// TestHostwideSignalQueue: queued real-time signals and POSIX timers count
// against RLIMIT_SIGPENDING in the user-namespace chain, which ends at the
// namespace's owner: root, for every jail today. A jail that blocks SIGRTMIN
// and sends it to itself 100,000 times (kill: not something a filter can
// refuse) took root's whole 96364, and root's sigqueue failed with EAGAIN.
// It waits for nsjail: the jail's user namespace created by its own host uid
// (the chain then ends there), or a small RLIMIT_SIGPENDING for the jail.
func TestHostwideSignalQueue(t *testing.T) {
	systest.Require(t, systest.Root)
	sigq := func() (n, limit int64) {
		b, err := os.ReadFile("/proc/self/status")
		require.NoError(t, err)
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "SigQ:"); ok {
				a, c, _ := strings.Cut(strings.TrimSpace(v), "/")
				n, _ = strconv.ParseInt(a, 10, 64)
				limit, _ = strconv.ParseInt(c, 10, 64)
				return
			}
		}
		t.Fatal("no SigQ in /proc/self/status")
		return
	}
	base, limit := sigq()
	peak := base
	res := hwWhile(t, hwPrelude+`
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
p = os.getpid()
for i in range(100000):
    try: os.kill(p, signal.SIGRTMIN)
    except OSError: break
tid = ctypes.c_int(); n = 0
while n < 1000 and libc.timer_create(1, None, ctypes.byref(tid)) == 0: n += 1
print("queued", [l.split()[1] for l in open("/proc/self/status") if l.startswith("SigQ")][0], "timers", n, flush=True)
time.sleep(0.5)
`, func(s *Spec) { s.Limits.WallTime = 30 * time.Second }, func() {
		if n, _ := sigq(); n > peak {
			peak = n
		}
	})
	require.Equal(t, StatusOK, res.Status)
	t.Logf("jail: %s; root's SigQ %d → peak %d of %d", strings.TrimSpace(string(res.Stdout)), base, peak, limit)
	assert.LessOrEqual(t, peak-base, limit/maxSignalShare,
		"one jail took %d of the host root's %d pending signals", peak-base, limit)
}

// TestHostwideTCPMemory: socket buffers are kernel memory of the host's
// tcp_mem; cgroup v2 charges them to the jail, cgroup v1 only with
// memory.kmem.tcp.limit_in_bytes. A jail that filled the buffers of 100
// loopback connections held 381 MiB of tcp_mem while its cgroup counted
// 5 MiB (60 here: 226 MiB). On v1 the group's memory.kmem.tcp limit is
// its memory limit (cgroup.Group), a counter of its own: the buffers stay
// within it, but for what the kernel forces through whatever the limit
// (a socket's minimum, an ACK or FIN: 1 to 2 MiB for these 120 sockets,
// whose number open_files bounds).
func TestHostwideTCPMemory(t *testing.T) {
	tcpPages := func() int64 {
		b, err := os.ReadFile("/proc/net/sockstat")
		require.NoError(t, err)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "TCP:") {
				f := strings.Fields(l)
				for i := 1; i+1 < len(f); i++ {
					if f[i] == "mem" {
						v, _ := strconv.ParseInt(f[i+1], 10, 64)
						return v
					}
				}
			}
		}
		t.Fatal("no TCP mem in /proc/net/sockstat")
		return 0
	}
	const limit = 64 << 20
	base := tcpPages()
	peak := base
	res := hwWhile(t, hwPrelude+`import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(128)
conns = []
for i in range(60):
    c = socket.create_connection(s.getsockname()); d, _ = s.accept(); c.setblocking(False)
    try:
        while True: c.send(b"x" * 65536)
    except (BlockingIOError, OSError): pass
    conns.append((c, d))
print("filled", flush=True)
time.sleep(0.5)
`, func(s *Spec) { s.Limits.MemoryBytes = limit }, func() {
		if v := tcpPages(); v > peak {
			peak = v
		}
	})
	held := (peak - base) * int64(os.Getpagesize())
	t.Logf("status %s; host tcp_mem %d → %d pages (%d MiB); jail's cgroup peak %d MiB",
		res.Status, base, peak, held>>20, res.PeakMemoryBytes>>20)
	assert.LessOrEqual(t, held, int64(limit+4<<20), "the jail held %d MiB of the host's TCP memory under a %d MiB limit", held>>20, limit>>20)
}

// TestHostwideForeignABI: a foreign-ABI call is a notification, not a
// SIGSYS; nsjail must end the jail for it in either mode (kill_reason
// "seccomp"), before the call returns, and the report names its ABI.
// It waits for nsjail to kill on seccomp.Violation.Foreign.
func TestHostwideForeignABI(t *testing.T) {
	for _, tc := range []struct{ name, call, abi string }{
		{"x32", `print("after", sc(0x40000000 | 272, 0x10000000), flush=True)`, "x32"},
		{"int80", `import mmap
m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
m.write(bytes([0xb8, 20, 0, 0, 0, 0xcd, 0x80, 0xc3]))
f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
print("after", f(), flush=True)`, "i386"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := jailRun(t, hwPrelude+"print(\"before\", flush=True)\n"+tc.call+"\n", nil)
			assert.Equal(t, "before\n", string(res.Stdout), "the foreign call returned")
			assert.Equal(t, StatusKilled, res.Status)
			assert.Equal(t, KillSeccomp, res.KillReason)
			assert.NotEqual(t, syscall.SIGSYS, res.Signal, "the filter no longer kills")
			require.NotNil(t, res.Seccomp)
			assert.Equal(t, tc.abi, res.Seccomp.ABI)
		})
	}
}

// TestHostwideNotificationBudget: every forbidden call costs the daemon a
// notification round (not the jail's CPU); after seccomp.MaxNotifications
// of them the jail ends with kill_reason "seccomp", in errno mode too.
// It waits for nsjail to kill on seccomp.Violation.OverBudget.
func TestHostwideNotificationBudget(t *testing.T) {
	start := systest.SelfCPU()
	res := jailRun(t, hwPrelude+fmt.Sprintf(`
for i in range(%d): sc(272, 0)
print("after", flush=True)
`, 3*seccomp.MaxNotifications), nil)
	daemon := systest.SelfCPU() - start
	t.Logf("this process's CPU for the run: %v; jail's %v", daemon, res.CPUTime)
	assert.Equal(t, StatusKilled, res.Status)
	assert.Equal(t, KillSeccomp, res.KillReason)
	assert.Empty(t, string(res.Stdout))
	require.NotNil(t, res.Seccomp)
	assert.Equal(t, seccomp.MaxNotifications+1, res.Seccomp.Calls[0].Count)
}

// TestHostwideNUMAPolicyIsTheJails: mbind, set_mempolicy and
// get_mempolicy are allowed (OpenBLAS calls mbind at start-up: numpy's
// every run was reported as a forbidden call), because they set the
// memory policy of the caller's own pages and threads only. What would
// reach beyond the jail stays refused: moving pages other processes share
// (MPOL_MF_MOVE_ALL needs CAP_SYS_NICE, which the kernel checks), and
// migrate_pages and move_pages of another process (the filter).
func TestHostwideNUMAPolicyIsTheJails(t *testing.T) {
	res := jailRun(t, hwPrelude+`import mmap
m = mmap.mmap(-1, 4 << 12)
m.write(b"x" * (4 << 12))
addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
mask = ctypes.c_ulong(1)
MPOL_BIND, MPOL_MF_MOVE, MPOL_MF_MOVE_ALL = 2, 2, 4
print("own", sc(237, addr, 4 << 12, MPOL_BIND, ctypes.addressof(mask), 64, MPOL_MF_MOVE))
print("all", sc(237, addr, 4 << 12, MPOL_BIND, ctypes.addressof(mask), 64, MPOL_MF_MOVE_ALL))
print("get", sc(239, 0, 0, 0, 0, 0), sc(238, 0, 0, 0))
print("others", sc(256, 1, 64, ctypes.addressof(mask), ctypes.addressof(mask)), sc(279, 1, 0, 0, 0, 0, 0))
`, nil)
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	out := hwLines(t, res)
	assert.Equal(t, "OK:0", out["own"], "the jail's own pages")
	assert.Equal(t, "EPERM", out["all"], "pages shared with others: CAP_SYS_NICE")
	assert.Equal(t, "OK:0 OK:0", out["get"])
	assert.Equal(t, "EPERM EPERM", out["others"], "migrate_pages, move_pages")
	calls := map[string]int{}
	for _, c := range res.Seccomp.Calls {
		calls[c.Syscall] = c.Count
	}
	assert.Equal(t, map[string]int{"migrate_pages": 1, "move_pages": 1}, calls, "only the two that reach other processes are reported")
}
