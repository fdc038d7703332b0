package nsjail

// The attacks of attackCases that run more than one job (run: rather than
// a program): F03, F04, X03, P17, I09, S03.

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// F03: a second, fresh job sees nothing of the first.
func runF03(t *testing.T, r *Runner, e *attackEnv) {
	paths := []string{"/tmp/m", "/workspace/m", "/dev/shm/m", "/workspace/.pythonrc"}
	res1 := jailRun(t, e.fill(`for p in ("/tmp/m", "/workspace/m", "/dev/shm/m", os.path.expanduser("~/.pythonrc")): print("F03 w", p, t(lambda: open(p, "w").write("x")))`+"\n"), nil)
	e.noCanaryLeak(t, res1)
	okRun(t, res1)
	out1 := parseProbes(res1)
	for _, p := range paths {
		out1.expect(t, "F03 w "+p, "", "OK:1") // the probe itself works
	}
	res2 := jailRun(t, e.fill(`print("F03 r", [p for p in ("/tmp/m", "/workspace/m", "/dev/shm/m", os.path.expanduser("~/.pythonrc")) if os.path.exists(p)])`+"\n"), nil)
	e.noCanaryLeak(t, res2)
	okRun(t, res2)
	assert.Equal(t, "[]", parseProbes(res2).line(t, "F03 r"), "job 2 sees files of job 1")
}

// F04: the collector reads /workspace after the job through openat2
// (RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) and refuses every planted link.
func runF04(t *testing.T, r *Runner, e *attackEnv) {
	res := jailRun(t, e.fill(`os.makedirs("/workspace/out", exist_ok=True)
os.symlink("/etc/shadow", "/workspace/out/result.txt")
os.symlink("/proc/1/root/etc/hostname", "/workspace/out/r2.txt")
os.symlink("../../../../../../../etc/hostname", "/workspace/out/r3.txt")
os.symlink("/etc", "/workspace/linkdir")
open("/workspace/out/real.txt", "w").write("mine")
print("F04 planted")
`), func(s *Spec) { s.Collect = []string{"out/*", "linkdir/hostname", "linkdir/*"} })
	e.noCanaryLeak(t, res)
	okRun(t, res)
	parseProbes(res).line(t, "F04 planted")
	got := map[string]CollectedFile{}
	for _, f := range res.Files {
		got[f.Path] = f
		assert.NotContains(t, string(f.Content), "root:", "%s: host content collected", f.Path)
	}
	require.Contains(t, got, "out/real.txt")
	assert.Equal(t, "mine", string(got["out/real.txt"].Content))
	for _, p := range []string{"out/result.txt", "out/r2.txt", "out/r3.txt"} {
		require.Contains(t, got, p)
		assert.Nil(t, got[p].Content, p)
		assert.Contains(t, got[p].Error, "symbolic link", p)
	}
	for _, p := range []string{"linkdir/hostname", "linkdir/*"} {
		require.Contains(t, got, p)
		assert.Nil(t, got[p].Content, p)
		assert.NotEmpty(t, got[p].Error, p)
	}
	hostname, _ := os.ReadFile("/etc/hostname")
	for _, f := range res.Files {
		if len(hostname) > 0 {
			assert.NotEqual(t, string(hostname), string(f.Content), "%s: the host's /etc/hostname came out", f.Path)
		}
	}
}

// X03: a sparse 30 MiB file and 3,000 empty ones. The collector's caps
// (per file, total, number of files) hold, each refusal is named, and the
// daemon reads by the fd's size, never past the cap.
func runX03(t *testing.T, r *Runner, e *attackEnv) {
	res := jailRun(t, e.fill(`os.makedirs("/workspace/out", exist_ok=True)
with open("/workspace/out/big.bin", "wb") as f: f.truncate(30 << 20)     # sparse, under RLIMIT_FSIZE
for i in range(3000): open(f"/workspace/out/f{i}", "w").close()
print("X03 planted")
`), func(s *Spec) {
		s.Collect = []string{"out/big.bin", "out/*"}
		s.CollectLimits = CollectLimits{FileBytes: 1 << 20, TotalBytes: 4 << 20, Files: 100}
	})
	e.noCanaryLeak(t, res)
	okRun(t, res)
	parseProbes(res).line(t, "X03 planted")
	require.LessOrEqual(t, len(res.Files), 101, "the file-count cap holds (plus at most one entry saying so)")
	var total int64
	var big *CollectedFile
	for i, f := range res.Files {
		total += int64(len(f.Content))
		if f.Path == "out/big.bin" {
			big = &res.Files[i]
		}
	}
	assert.LessOrEqual(t, total, int64(4<<20))
	require.NotNil(t, big)
	assert.Nil(t, big.Content)
	assert.Contains(t, big.Error, "larger than")
	assert.Equal(t, int64(30<<20), big.Size)
}

// P17: one job per probe, since a foreign-ABI call may kill on the spot.
func runP17(t *testing.T, r *Runner, e *attackEnv) {
	for _, p := range []struct{ name, call string }{
		{"unshare", "sc(X32 | 272, 0x10000000)"},
		{"keyctl", "sc(X32 | 250, 0, -4, 0)"},
		{"bpf", "sc(X32 | 321, 0, None, 0)"},
		{"getuid", "sc(X32 | 102)"},
	} {
		t.Run(p.name, func(t *testing.T) {
			res := jailRun(t, e.fill(fmt.Sprintf(`X32 = 0x40000000
print("P17 before", flush=True)
print("P17 x32 %s", %s, flush=True)
`, p.name, p.call)), nil)
			e.noCanaryLeak(t, res)
			out := parseProbes(res)
			out.line(t, "P17 before")
			// docs/security.md accepts ENOSYS, EPERM or a SIGSYS kill.
			// agentjail's filter notifies any x32 call, and the supervisor
			// ends the jail before answering it (stricter), a kill the
			// contract names "seccomp".
			if lines := out.all("P17 x32"); len(lines) > 0 {
				t.Errorf("an x32 call returned instead of ending the jail: %v", lines)
				out.expect(t, "P17 x32 "+p.name, "", "ENOSYS", "EPERM")
			}
			assert.Equal(t, syscall.SIGKILL, res.Signal)
			assert.Equal(t, StatusKilled, res.Status)
			assert.Equal(t, KillSeccomp, res.KillReason)
			require.NotNil(t, res.Seccomp)
			assert.Equal(t, "x32", res.Seccomp.ABI)
		})
	}
}

// I09: the mapping, and two concurrent jobs under different host uids.
func runI09(t *testing.T, r *Runner, e *attackEnv) {
	code := `print("I09", os.getuid(), open("/proc/self/uid_map").read().split(), open("/proc/self/gid_map").read().split(),
      open("/proc/self/setgroups").read().strip(), flush=True)
print("I09-at", time.time(), flush=True)     # this suite: when it began the second below
time.sleep(1)                                # this suite: stay alive while the other job runs
`
	a, b := runTwo(t, r, &Spec{Program: []byte(e.fill(code)), Limits: DefaultLimits()}, &Spec{Program: []byte(e.fill(code)), Limits: DefaultLimits()})
	res := []*Result{a, b}
	for _, x := range res {
		e.noCanaryLeak(t, x)
	}
	// Each job lives for a second after its I09-at line: they overlapped
	// if those lines are less than a second apart (a bound on the whole
	// run's wall time fails on a slow host, e.g. an emulated guest).
	var at [2]float64
	for i, x := range res {
		at[i], _ = strconv.ParseFloat(parseProbes(x).line(t, "I09-at"), 64)
	}
	assert.Less(t, math.Abs(at[0]-at[1]), 0.95, "the two jobs did not overlap: %v", at)
	for _, x := range res {
		okRun(t, x)
		// A warm run's namespace is a child of its zygote's: its map
		// names the host uid as the zygote's namespace does.
		mapped := x.HostUID
		if x.Start == StartWarm {
			mapped = zygoteUID(x.HostUID, r.UIDs.Base)
		}
		h := strconv.FormatUint(uint64(mapped), 10)
		assert.Equal(t, fmt.Sprintf("1000 ['1000', '%s', '1'] ['1000', '%s', '1'] deny", h, h), parseProbes(x).line(t, "I09"))
		assert.NotZero(t, x.HostUID)
		assert.NotEqual(t, uint32(os.Getuid()), x.HostUID, "the daemon's uid")
	}
	assert.NotEqual(t, res[0].HostUID, res[1].HostUID, "concurrent jobs share a host uid")
}

// S03: kill the parent, pid 1, everyone. A host process and a concurrent
// job must survive.
func runS03(t *testing.T, r *Runner, e *attackEnv) {
	host := exec.Command("/bin/sleep", "30")
	require.NoError(t, host.Start())
	defer func() { _ = host.Process.Kill(); _ = host.Wait() }()
	other := startJail(t, r, &Spec{Program: []byte("import time; time.sleep(1.5); print('S03 other job alive')"), Limits: DefaultLimits()})
	time.Sleep(300 * time.Millisecond)
	res := jailRun(t, e.fill(`print("S03 ppid", os.getppid(), "pid", os.getpid(), flush=True)
assert len([p for p in os.listdir("/proc") if p.isdigit()]) < 20, "not in a small pid namespace: refusing"
for pid in {os.getppid(), 1, -1} - {0, os.getpid()}:
    print("S03 kill", pid, t(os.kill, pid, signal.SIGKILL), flush=True)
time.sleep(0.5); print("S03 alive")
`), nil)
	e.noCanaryLeak(t, res)
	out := parseProbes(res)
	assert.NotContains(t, string(res.Stderr), "AssertionError", "no small pid namespace")
	assert.Equal(t, programParent()+" pid 2", out.line(t, "S03 ppid"))
	// The jail's init is PID 1: the kernel drops a SIGKILL sent to it
	// from inside its namespace (kill returns 0, nothing happens), and
	// kill(-1) reaches every other process of the namespace (there is
	// none: the init is spared) and nothing outside it.
	out.expect(t, "S03 kill 1", "", "OK:None")
	out.expect(t, "S03 kill -1", "", "ESRCH")
	out.line(t, "S03 alive")
	okRun(t, res)

	c := other()
	assert.Equal(t, StatusOK, c.Status, "the concurrent job was hit: %s", c.Stderr)
	assert.Equal(t, "S03 other job alive\n", string(c.Stdout))
	assert.NoError(t, host.Process.Signal(syscall.Signal(0)), "a host process was killed")
}
