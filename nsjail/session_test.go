package nsjail

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
	"agentjail/seccomp"
)

// miniSession is the smallest program that speaks the session protocol
// (session_linux.go): each call's payload is code, exec'd in one
// namespace, with the call's stdio; the daemon's own server
// (daemon/harness/session.py) is tested through the daemon. These tests
// are about the jail: its limits, its ends, its figures, its clean-up.
const miniSession = `
import json, os, signal, socket, sys
ctl = socket.socket(fileno=3)
os.set_inheritable(3, False)
null = os.open("/dev/null", os.O_RDWR)
ns = {"__name__": "__main__"}
busy = False
def interrupt(sig, frame):
    if busy:
        raise KeyboardInterrupt
signal.signal(signal.SIGINT, interrupt)
for fd in (0, 1, 2):
    os.dup2(null, fd)
ctl.send(b'{"t":"ready"}')
while True:
    msg, fds, _, _ = socket.recv_fds(ctl, 4096, 8)
    if not msg:
        os._exit(0)
    n = json.loads(msg)["n"]
    p, i, o, e, r = fds
    code = b"".join(iter(lambda: os.read(p, 1 << 16), b"")).decode()  # its feed, to EOF
    os.close(p)
    for a, b in ((i, 0), (o, 1), (e, 2)):
        os.dup2(a, b)
        os.close(a)
    status = 0
    try:
        busy = True
        exec(code, ns)
    except KeyboardInterrupt:
        status = 2
    except SystemExit:
        raise
    except BaseException as ex:
        print(repr(ex), file=sys.stderr)
        status = 256
    finally:
        busy = False
    sys.stdout.flush()
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.write(r, b"report")
    os.close(r)
    ctl.send(json.dumps({"t": "end", "n": n, "status": status, "mine": "x"}).encode())
`

var callLimits = CallLimits{WallTime: 10 * time.Second, CPUTime: 10 * time.Second, OutputBytes: 1 << 20}

// startSession starts miniSession with limits changed by mod; the test
// ends it and checks the host: nothing of it may be left.
func startSession(t *testing.T, mod func(*Spec)) *Session {
	t.Helper()
	r := testRunner(t)
	s := &Spec{Program: []byte(miniSession), Limits: DefaultLimits(), ID: NewSessionID()}
	if testWarm {
		s.Start, s.Etc = StartWarm, testEtc()
	}
	if mod != nil {
		mod(s)
	}
	mounts := systest.MountCount()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sess, err := r.StartSession(ctx, s)
	require.NoError(t, err)
	if testWarm {
		require.Equal(t, StartWarm, sess.Start, "the test runner's zygote is up")
	}
	t.Cleanup(func() {
		sess.End(EndDeleted)
		require.NoError(t, sess.Wait())
		systest.NoLeftovers(t, sess.HostUID(), s.ID, mounts)
	})
	return sess
}

func sessionCall(t *testing.T, s *Session, code string, mod func(*CallSpec)) *CallResult {
	t.Helper()
	c := &CallSpec{Payload: []byte(code), Limits: callLimits}
	if mod != nil {
		mod(c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := s.Call(ctx, c)
	require.NoError(t, err)
	if t.Failed() || testing.Verbose() {
		t.Logf("status=%s exit=%d signal=%v reason=%q ended=%q wall=%v cpu=%v peak=%d (%s)\nstdout: %s\nstderr: %s",
			res.Status, res.ExitCode, res.Signal, string(res.KillReason), res.Ended, res.WallTime, res.CPUTime, res.PeakMemoryBytes,
			res.PeakMemorySource, trim(res.Stdout), trim(res.Stderr))
	}
	return res
}

func TestSessionKeepsStateAcrossCalls(t *testing.T) {
	s := startSession(t, nil)
	assert.Equal(t, EndReason(""), s.Ended())
	r := sessionCall(t, s, "x = 41\nimport os\nos.write(1, b'fd\\n')\nprint('out')", nil)
	assert.Equal(t, StatusOK, r.Status)
	assert.Equal(t, "fd\nout\n", string(r.Stdout))
	assert.Equal(t, "report", string(r.Report))
	assert.Contains(t, string(r.End), `"mine": "x"`, "the end record is the caller's to read")
	for i := range 20 {
		r = sessionCall(t, s, "x += 1\nprint(x)", nil)
		assert.Equal(t, strconv.Itoa(42+i)+"\n", string(r.Stdout))
	}
	r = sessionCall(t, s, "import sys\nprint(sys.stdin.read())\n1/0", func(c *CallSpec) { c.Stdin = []byte("in") })
	assert.Equal(t, StatusError, r.Status)
	assert.Equal(t, 1, r.ExitCode)
	assert.Equal(t, "in\n", string(r.Stdout))
	assert.Contains(t, string(r.Stderr), "ZeroDivisionError")
	assert.Equal(t, EndReason(""), r.Ended, "an exception ends the call, not the session")
	assert.Equal(t, int64(-1), r.PidsPeak, "pids.peak cannot be reset for a call")
	assert.Less(t, r.WallTime, 5*time.Second)
	st := s.Stats()
	// A live python's own pages: a fresh python3 has megabytes; a fork of
	// a zygote only what it wrote since its go (the pages it reads are
	// the zygote's), some hundred KiB.
	assert.Greater(t, st.MemoryBytes, int64(256<<10))
	assert.GreaterOrEqual(t, st.PeakMemoryBytes, st.MemoryBytes)
	assert.Greater(t, st.CPUTime, time.Duration(0))
}

func TestSessionCallIsInterruptedAtItsWallTime(t *testing.T) {
	s := startSession(t, nil)
	sessionCall(t, s, "import time\nx = 'before'", nil)
	t0 := time.Now()
	r := sessionCall(t, s, "time.sleep(30)\nx = 'after'", func(c *CallSpec) { c.Limits.WallTime = 300 * time.Millisecond })
	assert.Less(t, time.Since(t0), 5*time.Second)
	assert.Equal(t, StatusKilled, r.Status)
	assert.Equal(t, KillWallTimeout, r.KillReason)
	assert.Equal(t, syscall.SIGINT, r.Signal, "interrupted, not killed")
	assert.Equal(t, 130, r.ExitCode)
	assert.Equal(t, EndReason(""), r.Ended, "the session lives on")
	r = sessionCall(t, s, "print(x)", nil)
	assert.Equal(t, "before\n", string(r.Stdout))
}

// A call whose code catches its interrupt and goes on, ending within
// InterruptGrace, still passed its limit: it is killed for it, with no
// signal (it did not die of the interrupt) and its code's exit code.
func TestSessionCallThatCatchesItsInterruptIsKilled(t *testing.T) {
	s := startSession(t, nil)
	r := sessionCall(t, s, "import time\ntry:\n    time.sleep(30)\nexcept KeyboardInterrupt:\n    pass\ntime.sleep(0.2)\nprint('went on')",
		func(c *CallSpec) { c.Limits.WallTime = 300 * time.Millisecond })
	assert.Equal(t, StatusKilled, r.Status)
	assert.Equal(t, KillWallTimeout, r.KillReason)
	assert.Equal(t, syscall.Signal(0), r.Signal, "it did not die of the interrupt")
	assert.Equal(t, 0, r.ExitCode)
	assert.Equal(t, "went on\n", string(r.Stdout))
	assert.GreaterOrEqual(t, r.WallTime, 500*time.Millisecond)
	assert.Equal(t, EndReason(""), r.Ended, "the session lives on")
	r = sessionCall(t, s, "print('next')", nil)
	assert.Equal(t, StatusOK, r.Status, "the next call is not marked")
}

func TestSessionEndsWhenACallIgnoresItsInterrupt(t *testing.T) {
	s := startSession(t, nil)
	t0 := time.Now()
	r := sessionCall(t, s, "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(30)",
		func(c *CallSpec) { c.Limits.WallTime = 200 * time.Millisecond })
	assert.Less(t, time.Since(t0), 5*time.Second)
	assert.Equal(t, StatusKilled, r.Status)
	assert.Equal(t, KillWallTimeout, r.KillReason)
	assert.Equal(t, syscall.SIGKILL, r.Signal)
	assert.Equal(t, EndWall, r.Ended)
	assert.Equal(t, EndWall, s.Ended())
	_, err := s.Call(context.Background(), &CallSpec{Payload: []byte("1"), Limits: callLimits})
	var ended *SessionEndedError
	require.ErrorAs(t, err, &ended)
	assert.Equal(t, EndWall, ended.Reason)
}

func TestSessionCallCPUAndOutput(t *testing.T) {
	s := startSession(t, nil)
	r := sessionCall(t, s, "while True: pass", func(c *CallSpec) { c.Limits.CPUTime = 300 * time.Millisecond })
	assert.Equal(t, StatusKilled, r.Status)
	assert.Equal(t, KillCPUTimeout, r.KillReason)
	assert.GreaterOrEqual(t, r.CPUTime, 300*time.Millisecond)
	assert.Equal(t, EndReason(""), r.Ended)
	r = sessionCall(t, s, "while True: print('x' * 1000)", func(c *CallSpec) { c.Limits.OutputBytes = 10000 })
	assert.Equal(t, StatusKilled, r.Status)
	assert.Equal(t, KillOutputLimit, r.KillReason)
	assert.True(t, r.StdoutTruncated)
	assert.Len(t, r.Stdout, 10000)
	assert.Equal(t, EndReason(""), r.Ended)
	r = sessionCall(t, s, "print('still here')", nil)
	assert.Equal(t, "still here\n", string(r.Stdout))
	assert.Less(t, r.CPUTime, 300*time.Millisecond, "a call's CPU time is its own")
}

func TestSessionCPUBudgetEndsIt(t *testing.T) {
	// 2 s: a cold session's start (python's and the server's) must fit,
	// emulated too.
	s := startSession(t, func(s *Spec) { s.Limits.CPUTime = 2 * time.Second })
	r := sessionCall(t, s, "while True: pass", nil)
	assert.Equal(t, StatusKilled, r.Status)
	assert.Equal(t, KillCPUTimeout, r.KillReason)
	assert.Equal(t, EndCPU, r.Ended)
}

func TestSessionPeakMemoryPerCall(t *testing.T) {
	s := startSession(t, func(s *Spec) { s.Limits.MemoryBytes = 512 << 20 })
	r1 := sessionCall(t, s, "b = bytearray(128 << 20)\ndel b", nil)
	r2 := sessionCall(t, s, "b = bytearray(64 << 20)\ndel b", nil)
	if src := strings.TrimSuffix(r2.PeakMemorySource, WarmPeakSuffix); systest.CgroupV2() && src != "memory.peak" {
		assert.Equal(t, "memory.peak (since creation)", src)
		return // the kernel cannot reset the mark: the session's peak, said so
	}
	base := sessionCall(t, s, "pass", nil).PeakMemoryBytes
	t.Logf("peaks: 128 MiB call %d, 64 MiB call %d, empty call %d", r1.PeakMemoryBytes, r2.PeakMemoryBytes, base)
	assert.InDelta(t, float64(base+128<<20), float64(r1.PeakMemoryBytes), 4<<20)
	assert.InDelta(t, float64(base+64<<20), float64(r2.PeakMemoryBytes), 4<<20, "the call's own peak, not the 128 MiB of the one before")
	assert.InDelta(t, float64(r1.PeakMemoryBytes), float64(s.Stats().PeakMemoryBytes), 4<<20, "the session's peak keeps the highest")
}

func TestSessionMemoryLimitEndsIt(t *testing.T) {
	s := startSession(t, func(s *Spec) { s.Limits.MemoryBytes = 64 << 20 })
	sessionCall(t, s, "x = 1", nil)
	r := sessionCall(t, s, "b = bytearray(256 << 20)", nil)
	assert.Equal(t, StatusKilled, r.Status)
	assert.Equal(t, KillMemoryLimit, r.KillReason)
	assert.Equal(t, EndMemory, r.Ended)
	assert.Greater(t, r.OOMKills, int64(0))
}

func TestSessionExitEndsIt(t *testing.T) {
	for _, code := range []string{"import sys\nprint('bye')\nsys.exit(3)", "import os\nos._exit(3)"} {
		t.Run(strings.Fields(code)[1], func(t *testing.T) {
			s := startSession(t, nil)
			r := sessionCall(t, s, code, nil)
			assert.Equal(t, StatusError, r.Status)
			assert.Equal(t, 3, r.ExitCode)
			assert.Equal(t, EndExited, r.Ended)
			if strings.Contains(code, "bye") {
				assert.Equal(t, "bye\n", string(r.Stdout))
			}
		})
	}
}

func TestSessionOneCallAtATime(t *testing.T) {
	s := startSession(t, nil)
	var wg sync.WaitGroup
	var r *CallResult
	wg.Go(func() { r = sessionCall(t, s, "import time\ntime.sleep(1)", nil) })
	time.Sleep(300 * time.Millisecond)
	_, err := s.Call(context.Background(), &CallSpec{Payload: []byte("1"), Limits: callLimits})
	assert.ErrorIs(t, err, ErrSessionBusy)
	wg.Wait()
	assert.Equal(t, StatusOK, r.Status)
}

func TestSessionEndDuringACall(t *testing.T) {
	s := startSession(t, nil)
	go func() {
		time.Sleep(300 * time.Millisecond)
		s.End(EndDeleted)
	}()
	r := sessionCall(t, s, "import time\nprint('started')\ntime.sleep(30)", nil)
	assert.Equal(t, StatusKilled, r.Status)
	assert.Equal(t, KillCancelled, r.KillReason)
	assert.Equal(t, "started\n", string(r.Stdout))
	assert.Equal(t, EndDeleted, r.Ended)
}

func TestSessionCancelledCallIsInterrupted(t *testing.T) {
	s := startSession(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	r, err := s.Call(ctx, &CallSpec{Payload: []byte("import time\ntime.sleep(30)"), Limits: callLimits})
	require.NoError(t, err)
	assert.Equal(t, KillCancelled, r.KillReason)
	assert.Equal(t, EndReason(""), r.Ended)
	sctx, stop := context.WithCancelCause(context.Background())
	go func() { time.Sleep(300 * time.Millisecond); stop(KillShutdown) }()
	r, err = s.Call(sctx, &CallSpec{Payload: []byte("import time\ntime.sleep(30)"), Limits: callLimits})
	require.NoError(t, err)
	assert.Equal(t, KillShutdown, r.KillReason)
	assert.Equal(t, EndShutdown, r.Ended)
}

func TestSessionCollectsPerCall(t *testing.T) {
	s := startSession(t, nil)
	r := sessionCall(t, s, "open('/workspace/a.txt', 'w').write('one')", func(c *CallSpec) { c.Collect = []string{"a.txt"} })
	require.Len(t, r.Files, 1)
	assert.Equal(t, "one", string(r.Files[0].Content))
	r = sessionCall(t, s, "import os\nos.symlink('/etc/passwd', '/workspace/b.txt')", func(c *CallSpec) { c.Collect = []string{"*.txt"} })
	require.Len(t, r.Files, 2)
	assert.Equal(t, "one", string(r.Files[0].Content), "the workspace lasts")
	assert.Contains(t, r.Files[1].Error, "symbolic link")
}

func TestSessionControlLost(t *testing.T) {
	s := startSession(t, nil)
	r := sessionCall(t, s, "import os, time\nos.close(3)\ntime.sleep(30)", nil)
	assert.Equal(t, KillControlLost, r.KillReason)
	assert.Equal(t, EndControlLost, r.Ended)
}

func TestSessionForbiddenCallsPerCall(t *testing.T) {
	s := startSession(t, nil)
	r := sessionCall(t, s, "import ctypes\nctypes.CDLL(None).syscall(101, 0, 0, 0, 0)", nil) // ptrace
	require.NotNil(t, r.Seccomp)
	assert.Equal(t, "ptrace", r.Seccomp.Syscall)
	r = sessionCall(t, s, "pass", nil)
	assert.Nil(t, r.Seccomp, "the next call made none")
}

func TestSessionForbiddenCallInKillModeEndsIt(t *testing.T) {
	s := startSession(t, func(s *Spec) { s.OnForbiddenSyscall = seccomp.ModeKill })
	sessionCall(t, s, "x = 1", nil)
	r := sessionCall(t, s, "import ctypes\nctypes.CDLL(None).syscall(101, 0, 0, 0, 0)", nil) // ptrace
	assert.Equal(t, StatusKilled, r.Status)
	assert.Equal(t, KillSeccomp, r.KillReason)
	assert.Equal(t, EndSeccomp, r.Ended)
	require.NotNil(t, r.Seccomp)
	assert.Equal(t, "ptrace", r.Seccomp.Syscall)
}

func TestSessionStartFailureSaysWhy(t *testing.T) {
	r := testRunner(t)
	s := &Spec{Program: []byte("import sys\nprint('no protocol here', file=sys.stderr)\nsys.exit(2)"), Limits: DefaultLimits()}
	if testWarm {
		s.Start, s.Etc = StartWarm, testEtc()
	}
	_, err := r.StartSession(context.Background(), s)
	var se *StageError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Contains(t, err.Error(), "no protocol here")
}
