package nsjail

// The limits of a jail (memory, wall time, processes, tmp size) and the
// errors of its set-up.

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMemoryLimitStopsAllocation(t *testing.T) {
	res := jailRun(t, `x = bytearray(200 << 20)
for i in range(0, len(x), 4096): x[i] = 1
print("survived")`, func(s *Spec) { s.Limits.MemoryBytes = 64 << 20 })
	assert.Equal(t, StatusKilled, res.Status)
	assert.Equal(t, KillMemoryLimit, res.KillReason)
	assert.Equal(t, syscall.SIGKILL, res.Signal)
	assert.NotContains(t, string(res.Stdout), "survived")
	assert.GreaterOrEqual(t, res.OOMKills, int64(1))
	assert.LessOrEqual(t, res.PeakMemoryBytes, int64(64<<20))
	assert.Greater(t, res.PeakMemoryBytes, int64(48<<20))
}

func TestWallTimeout(t *testing.T) {
	res := jailRun(t, `import time; time.sleep(30)`, func(s *Spec) { s.Limits.WallTime = time.Second })
	assert.Equal(t, StatusKilled, res.Status)
	assert.Equal(t, KillWallTimeout, res.KillReason)
	assert.InDelta(t, float64(time.Second), float64(res.WallTime), float64(100*time.Millisecond))
	assert.Less(t, res.CPUTime, 200*time.Millisecond)
}

func TestForkBombContained(t *testing.T) {
	res := jailRun(t, `import os, time
n = 0
end = time.time() + 1.5
while time.time() < end:
    try:
        if os.fork() == 0:
            time.sleep(60); os._exit(0)
        n += 1
    except OSError:
        time.sleep(0.01)
print("forked", n, flush=True)
time.sleep(60)`, func(s *Spec) {
		s.Limits.Pids = 32
		s.Limits.WallTime = 3 * time.Second
	})
	assert.Equal(t, KillWallTimeout, res.KillReason)
	assert.Contains(t, string(res.Stdout), "forked 31\n", "python3 itself and 31 children")
	assert.Greater(t, res.PidsMaxHits, int64(0))
	// The host can still fork.
	require.NoError(t, exec1("/bin/true"))
}

func exec1(path string) error {
	p, err := os.StartProcess(path, []string{path}, &os.ProcAttr{})
	if err != nil {
		return err
	}
	_, err = p.Wait()
	return err
}

func TestTmpSizeLimit(t *testing.T) {
	res := jailRun(t, `import errno
n = 0
try:
    with open("/tmp/big", "wb") as f:
        for i in range(100):
            f.write(b"x" * (1 << 20)); f.flush(); n += 1
except OSError as e:
    print(errno.errorcode[e.errno], n)`, func(s *Spec) { s.Limits.TmpBytes = 16 << 20 })
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	assert.Regexp(t, `^ENOSPC 1[56]\n$`, string(res.Stdout))
}

func TestOrphanDoesNotHoldTheRun(t *testing.T) {
	start := time.Now()
	res := jailRun(t, `import os, signal, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT): signal.signal(s, signal.SIG_IGN)
        time.sleep(3600)
    os._exit(0)
print("main exiting", flush=True)`, nil)
	assert.Equal(t, StatusOK, res.Status)
	assert.Less(t, time.Since(start), 3*time.Second)
}

func TestSetupErrors(t *testing.T) {
	r := testRunner(t)
	_, err := r.Run(t.Context(), &Spec{Program: []byte("pass"), Python: "/usr/bin/no-such-python"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no-such-python")

	_, err = r.Run(t.Context(), &Spec{Program: []byte("pass"), Python: "/root/.pyenv/shims/python3"})
	require.Error(t, err)

	l := DefaultLimits()
	l.MemoryBytes = 1 << 20
	_, err = r.Run(t.Context(), &Spec{Program: []byte("pass"), Limits: l})
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "limits.memory_bytes", fe.Field)
}
