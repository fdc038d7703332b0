package nsjail

// Warm jails and the OS threads they start on: a jail outlives its starting
// thread, and only cold keepers and cold session jails hold theirs.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"golang.org/x/sys/unix"

	"agentjail/internal/systest"
)

// startOnThreadThatEnds runs start (a jail's start) on a goroutine that
// locks its OS thread and returns without unlocking it, so that the
// runtime ends the thread, and waits until the thread is gone: every
// parent-death signal tied to it has been sent by then.
func startOnThreadThatEnds(t *testing.T, start func() error) error {
	t.Helper()
	type started struct {
		tid int
		err error
	}
	done := make(chan started, 1)
	go func() {
		// Never unlocked: the thread ends with the goroutine. Not on the
		// main thread, which the runtime cannot end (it parks it).
		for {
			runtime.LockOSThread()
			if unix.Gettid() != os.Getpid() {
				break
			}
			runtime.UnlockOSThread()
			time.Sleep(time.Millisecond)
		}
		err := start()
		done <- started{unix.Gettid(), err}
	}()
	s := <-done
	task := fmt.Sprintf("/proc/self/task/%d", s.tid)
	require.Eventually(t, func() bool {
		_, err := os.Stat(task)
		return errors.Is(err, os.ErrNotExist)
	}, 10*time.Second, time.Millisecond, "the starting thread ends")
	return s.err
}

// A warm run's jail does not die with the OS thread that started it
// (its pid1 is not threadBound): the daemon lets that thread go once the
// bootstrap has been waited for. A cold jail, started the same way,
// dies with it: that is what the method sees.
func TestWarmJailOutlivesItsStartingThread(t *testing.T) {
	r, w := defaultWarm(t, 1)
	j := testJail(t, r)
	err := startOnThreadThatEnds(t, func() error {
		if err := w.startRun(j, w.pool.build); err != nil {
			return err
		}
		return j.flow.prepare(j, DefaultLimits())
	})
	require.NoError(t, err)
	assert.False(t, j.pid1.threadBound())
	// Running only tells a live process from a zombie; a SIGKILL on its
	// way is seen by the run below, which needs both.
	assert.True(t, systest.Running(j.proc.Pid), "the warm jail's pid 1 lives on")
	assert.True(t, systest.Running(warmOf(j).progPid), "its program, forked ahead, lives on")
	spec := &Spec{ID: NewID(), Program: []byte("print('ok')"), Limits: DefaultLimits(), Start: StartWarm}
	res, err := j.flow.run(context.Background(), j, spec, requestConfigFor(spec, codeFiles(spec)))
	require.NoError(t, err)
	assert.Equal(t, StatusOK, res.Status, "%+v", res)
	assert.Equal(t, "ok\n", string(res.Stdout))

	// The cold jail's pid 1 arms its parent-death signal after the
	// bootstrap has sent its pid (start returns then), and before it
	// answers the build: a thread that ends before awaitBuild may end
	// before that signal is armed (under CPU contention, 8 runs in 20),
	// and then nothing kills pid 1. The daemon keeps the thread locked
	// until the jail has been waited for; here it ends once the jail is
	// built, as the warm run's does above.
	c := testJail(t, r)
	require.NoError(t, startOnThreadThatEnds(t, func() error {
		if err := c.flow.start(c, r.build(jailBase{}, DefaultLimits().TmpBytes)); err != nil {
			return err
		}
		return awaitBuilt(c)
	}))
	assert.True(t, c.pid1.threadBound())
	require.Eventually(t, func() bool { return !systest.Running(c.proc.Pid) }, 10*time.Second, time.Millisecond,
		"the cold jail's pid 1 dies with the thread")
	require.NoError(t, c.wait())
	if st := c.pid1.(*childInit).st; assert.NotNil(t, st, "the cold jail's pid 1 was waited for") {
		ws := st.Sys().(syscall.WaitStatus)
		assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "the cold jail died with the thread: %v", st)
	}
}

// keepers counts the goroutines in preparedPool.keep, and those of them
// locked to their OS thread.
func keepers() (all, locked int) { return goroutinesIn("nsjail.(*preparedPool).keep(") }

// goroutinesIn counts the goroutines with a frame of fn, and those of them
// locked to their OS thread, from the runtime's own goroutine dump (its
// header says "locked to thread"; should a Go release word it otherwise,
// the tests' cold halves, which expect one locked, fail).
func goroutinesIn(fn string) (all, locked int) {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, fn) {
			continue
		}
		all++
		if head, _, _ := strings.Cut(g, "\n"); strings.Contains(head, "locked to thread") {
			locked++
		}
	}
	return all, locked
}

// A warm pool's keepers, parked until their runs end, hold no OS thread;
// a cold pool's keeper holds its thread (pid1.threadBound). Counted
// beside the shared test runner's pools, once they are full.
func TestOnlyColdKeepersHoldTheirThread(t *testing.T) {
	shared := testRunner(t)
	require.Eventually(t, func() bool {
		ready, _ := shared.PreparedStats()
		_, ahead, _, _ := shared.WarmStats()
		return ready+ahead >= sharedPool || testCold
	}, 30*time.Second, 10*time.Millisecond, "the shared runner's pools are full")
	var all0, locked0 int
	require.Eventually(t, func() bool {
		a, l := keepers()
		time.Sleep(20 * time.Millisecond)
		all0, locked0 = keepers()
		return a == all0 && l == locked0
	}, 10*time.Second, time.Millisecond, "the keepers are settled")

	warmRunner(t, ZygoteSpec{Name: "default", Ahead: 2})
	require.Eventually(t, func() bool {
		a, l := keepers()
		return a == all0+2 && l == locked0
	}, 10*time.Second, 10*time.Millisecond, "two warm keepers, neither locked to its thread")

	c := freshRunner(t)
	t.Cleanup(c.Close)
	c.KeepPrepared(1, PreparedTemplate{})
	waitPrepared(t, c, 1)
	a, l := keepers()
	assert.Equal(t, all0+3, a, "and one cold keeper")
	assert.Equal(t, locked0+1, l, "locked to its thread")
}

// The same for a session's own jail (jail.startOwned): its goroutine ends
// after a warm start, and holds its locked thread for a cold one.
func TestOnlyColdSessionJailsHoldTheirThread(t *testing.T) {
	r, w := defaultWarm(t, 1)
	owned := func() (int, int) { return goroutinesIn("nsjail.(*jail).startOwned.func1(") }
	all0, locked0 := owned()

	j := testJail(t, r)
	end, err := j.startOwned(func() error { return w.startRun(j, w.pool.build) })
	require.NoError(t, err)
	t.Cleanup(func() { close(end) })
	require.Eventually(t, func() bool {
		a, l := owned()
		return a == all0 && l == locked0
	}, 10*time.Second, time.Millisecond, "a warm start's goroutine ends")

	c := testJail(t, r)
	cend, err := c.startOwned(func() error { return c.flow.start(c, r.build(jailBase{}, DefaultLimits().TmpBytes)) })
	require.NoError(t, err)
	// The jail is waited for before its thread goes (testJail's clean-up
	// after it finds nothing left to do).
	t.Cleanup(func() { _ = c.cleanup(); close(cend) })
	a, l := owned()
	assert.Equal(t, all0+1, a, "a cold start's goroutine waits")
	assert.Equal(t, locked0+1, l, "locked to its thread")
}
