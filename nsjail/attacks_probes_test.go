package nsjail

// The adversarial suite's probes: the canary job that times the host
// during an attack, the probe lines a program prints, and the checks on
// a run's end and the host's kernel log.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"agentjail/internal/systest"
	"agentjail/seccomp"
)

type canaryResult struct {
	res          *Result
	err          error
	start, end   time.Time
	hostForkErr  error // the host (and so the daemon) can still fork
	mountsBefore int   // host mount count before the canary job
}

// startCanary runs the canary job after delay, concurrently with whatever
// the test does meanwhile. It calls no testing.T method: the caller checks.
func startCanary(r *Runner, delay time.Duration) <-chan canaryResult {
	ch := make(chan canaryResult, 1)
	go func() {
		time.Sleep(delay)
		var c canaryResult
		c.mountsBefore = systest.MountCount()
		c.start = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s := &Spec{ID: NewID(), Program: []byte(canaryProgram), Limits: DefaultLimits()}
		testMode(r, s) // a job of its own, in the test's start mode
		c.res, c.err = r.Run(ctx, s)
		c.end = time.Now()
		c.hostForkErr = exec.Command("/bin/true").Run()
		ch <- c
	}()
	return ch
}

func canaryLatency(t *testing.T, r *Runner) time.Duration {
	c := <-startCanary(r, 0)
	checkCanary(t, c, time.Now().Add(time.Hour), 0)
	return c.end.Sub(c.start)
}

// checkCanary: the concurrent job succeeded, with a latency near its
// baseline, while the attack was still running, and left nothing behind.
func checkCanary(t *testing.T, c canaryResult, attackEnd time.Time, baseline time.Duration) {
	t.Helper()
	require.NoError(t, c.err, "canary job")
	require.NotNil(t, c.res)
	assert.Equal(t, StatusOK, c.res.Status, "canary job: %s", c.res.Stderr)
	assert.Equal(t, canaryOutput, string(c.res.Stdout), "canary job output")
	assert.NoError(t, c.hostForkErr, "the host cannot fork /bin/true")
	lat := c.end.Sub(c.start)
	if baseline > 0 {
		t.Logf("canary latency during the attack: %v (alone: %v)", lat, baseline)
		assert.Less(t, lat, max(10*baseline, time.Second), "canary latency is not normal")
		assert.True(t, c.end.Before(attackEnd), "the canary did not run during the attack")
	}
	systest.NoLeftovers(t, c.res.HostUID, c.res.ID, c.mountsBefore)
}

// probeOut is a run's stdout as "ID label RESULT" lines.
type probeOut struct {
	lines []string
}

func parseProbes(res *Result) *probeOut {
	p := &probeOut{}
	sc := bufio.NewScanner(strings.NewReader(string(res.Stdout)))
	sc.Buffer(make([]byte, 1<<20), 2<<20)
	for sc.Scan() {
		p.lines = append(p.lines, sc.Text())
	}
	return p
}

// line returns what follows prefix on the first line that starts with it
// (prefix and a space), and fails t when there is none.
func (p *probeOut) line(t *testing.T, prefix string) string {
	t.Helper()
	for _, l := range p.lines {
		if l == prefix {
			return ""
		}
		if rest, ok := strings.CutPrefix(l, prefix+" "); ok {
			return rest
		}
	}
	t.Errorf("no line %q in the output", prefix+" …")
	return ""
}

// all returns every line that starts with prefix and a space.
func (p *probeOut) all(prefix string) []string {
	var out []string
	for _, l := range p.lines {
		if strings.HasPrefix(l, prefix+" ") {
			out = append(out, l)
		}
	}
	return out
}

// result returns the RESULT token after label on the line of prefix
// (label "" means right after the prefix). An "OK:<repr>" result is
// returned up to its first space, which keeps the "OK:" that matters.
func (p *probeOut) result(t *testing.T, prefix, label string) string {
	t.Helper()
	rest := p.line(t, prefix)
	if label != "" {
		i := strings.Index(" "+rest+" ", " "+label+" ")
		if i < 0 {
			t.Errorf("line %q has no label %q", prefix+" "+rest, label)
			return ""
		}
		rest = rest[i+len(label):]
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		t.Errorf("line %q has no result after %q", prefix+" "+p.line(t, prefix), label)
		return ""
	}
	return f[0]
}

// expect asserts that the result after label on the line of prefix is one
// of allowed.
func (p *probeOut) expect(t *testing.T, prefix, label string, allowed ...string) string {
	t.Helper()
	got := p.result(t, prefix, label)
	assert.Contains(t, allowed, got, "%s %s: want one of %v (an OK: result means the attack worked)", prefix, label, allowed)
	return got
}

// seccompCalls is the report of forbidden calls (name → attempts).
func seccompCalls(res *Result) map[string]int {
	m := map[string]int{}
	if res.Seccomp != nil {
		for _, c := range res.Seccomp.Calls {
			m[c.Syscall] += c.Count
		}
	}
	return m
}

// firstSeccompCall is the first forbidden call the report names.
func firstSeccompCall(res *Result) string {
	if res.Seccomp == nil {
		return ""
	}
	return res.Seccomp.Syscall
}

// killOnForbidden sets on_forbidden_syscall "kill".
func killOnForbidden(s *Spec) { s.OnForbiddenSyscall = seccomp.ModeKill }

// reported asserts that the seccomp report names each call (agentjail
// reports forbidden calls; docs/security.md's reference profile only refuses
// them, so this is stricter).
func reported(t *testing.T, res *Result, calls ...string) {
	t.Helper()
	got := seccompCalls(res)
	for _, c := range calls {
		assert.Positive(t, got[c], "the seccomp report does not name %s (report: %v)", c, got)
	}
}

// okRun asserts that the program ran to its end by itself.
func okRun(t *testing.T, res *Result) {
	t.Helper()
	assert.Equal(t, StatusOK, res.Status, "stderr: %s", trim(res.Stderr))
	assert.Equal(t, KillNone, res.KillReason)
}

// wallKilled asserts a kill by the wall clock at limit, with no grace
// (agentjail sends SIGKILL at once) beyond half a second.
func wallKilled(t *testing.T, res *Result, limit time.Duration) {
	t.Helper()
	assert.Equal(t, StatusKilled, res.Status)
	assert.Equal(t, KillWallTimeout, res.KillReason)
	assert.Equal(t, syscall.SIGKILL, res.Signal)
	assert.GreaterOrEqual(t, res.WallTime, limit)
	assert.LessOrEqual(t, res.WallTime, limit+500*time.Millisecond)
}

func wall(d time.Duration) func(*Spec) { return func(s *Spec) { s.Limits.WallTime = d } }

// hostTopLevel lists the host's top-level directories that a jail must
// never see (everything but what agentjail puts in the jail's root).
func hostTopLevel(t *testing.T) []string {
	jail := map[string]bool{"bin": true, "code": true, "dev": true, "etc": true, "lib": true, "lib32": true,
		"lib64": true, "libx32": true, "proc": true, "sbin": true, "tmp": true, "usr": true, "workspace": true}
	ents, err := os.ReadDir("/")
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		if !jail[e.Name()] {
			out = append(out, e.Name())
		}
	}
	return out
}

// kernelLogFromNow returns a function, to be called once, that reads the
// kernel log's records (/dev/kmsg, root) written since this call. The kernel
// rate-limits some OOM lines: what it returns may lack some, never add.
func kernelLogFromNow(t *testing.T) func() []string {
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err == nil {
		_, err = unix.Seek(fd, 0, io.SeekEnd)
		if err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		t.Logf("no kernel log (%v): OOM kills are checked by their count only", err)
		return func() []string { return nil }
	}
	// Closed once read (the attack harness counts this process's fds), or
	// at the end of a test that failed before.
	closed := false
	closeOnce := func() {
		if !closed {
			closed = true
			unix.Close(fd)
		}
	}
	t.Cleanup(closeOnce)
	return func() []string {
		defer closeOnce()
		var lines []string
		buf := make([]byte, 8192)
		for {
			n, err := unix.Read(fd, buf)
			if err == unix.EPIPE { // records were overwritten: go on with the next
				continue
			}
			if err != nil || n <= 0 {
				return lines
			}
			// "prio,seq,usec,flags;message\n"
			rec := string(buf[:n])
			if _, msg, ok := strings.Cut(rec, ";"); ok {
				lines = append(lines, strings.TrimRight(msg, "\n"))
			}
		}
	}
}

func vmstat(key string) int64 {
	b, _ := os.ReadFile("/proc/vmstat")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == key {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return -1
}

func fileHash(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return "error: " + err.Error()
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
