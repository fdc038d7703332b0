package nsjail

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A zygote that fails during a warm run is the warm runtime's failure,
// never the program's: the run's answer says so (a stage error, stage
// "warm runtime"), within its limits, and the zygote is replaced.

// warmSleep starts a warm run of a program that sleeps 30 s, with wall,
// and returns its answer on a channel.
func warmSleep(r *Runner, wall time.Duration) <-chan error {
	out := make(chan error, 1)
	go func() {
		l := DefaultLimits()
		l.WallTime = wall
		res, err := r.Run(context.Background(), &Spec{Program: []byte("import time\ntime.sleep(30)"), Limits: l, Start: StartWarm})
		if err == nil {
			err = &resultError{res}
		}
		out <- err
	}()
	return out
}

// resultError is a result where an error was wanted, for the message.
type resultError struct{ *Result }

func (e *resultError) Error() string {
	return "a result: status " + string(e.Status) + ", signal " + e.Signal.String() + ", kill reason " + string(e.KillReason) + ", start " + string(e.Start)
}

func requireRuntimeFailed(t *testing.T, err error, why string) {
	t.Helper()
	var se *StageError
	require.ErrorAs(t, err, &se, "the zygote's failure is not the program's")
	assert.Equal(t, "warm runtime", se.Stage)
	assert.Contains(t, se.Msg, ErrZygoteFailed.Error())
	assert.Contains(t, se.Msg, why)
}

// requireNewZygote waits until a zygote other than z serves r's
// "default". One read of the current zygote: a condition that read the
// count of zygotes up, then the current one, could see z still up and
// then none yet, and take that for a new one (a warm request then ran
// cold, once under load).
func requireNewZygote(t *testing.T, r *Runner, z *zygote) {
	t.Helper()
	require.Eventually(t, func() bool {
		c := currentZygote(r, "default")
		return c != nil && c != z
	}, 20*time.Second, 10*time.Millisecond, "a new zygote")
}

func TestWarmRunOfAKilledZygoteIsTheRuntimes(t *testing.T) {
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: 1})
	py := zygoteOf(t, r, "default").py
	z := currentZygote(r, "default")
	answer := warmSleep(r, 10*time.Second)
	time.Sleep(500 * time.Millisecond) // the run is under way
	require.NoError(t, syscall.Kill(py, syscall.SIGKILL))
	select {
	case err := <-answer:
		requireRuntimeFailed(t, err, "died")
	case <-time.After(10 * time.Second):
		t.Fatal("no answer 10 s after the zygote's death")
	}
	<-z.done
	requireNewZygote(t, r, z)
	assert.Equal(t, StartWarm, warmPass(t, r).Start)
}

func TestWarmRunOfAStalledZygoteEndsInTime(t *testing.T) {
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: 1})
	py := zygoteOf(t, r, "default").py
	z := currentZygote(r, "default")
	t0 := time.Now()
	answer := warmSleep(r, time.Second)
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, syscall.Kill(py, syscall.SIGSTOP)) // hung: it reaps nothing
	t.Cleanup(func() { _ = syscall.Kill(py, syscall.SIGCONT) })
	select {
	case err := <-answer:
		requireRuntimeFailed(t, err, "did not reap")
		// Its wall time (1 s) and the zygote's grace to reap (3 s).
		assert.Less(t, time.Since(t0), 1*time.Second+zygoteReapGrace+3*time.Second)
	case <-time.After(15 * time.Second):
		t.Fatal("no answer in 15 s for a run of 1 s: held by its stopped zygote")
	}
	<-z.done // killed
	requireNewZygote(t, r, z)
	assert.Equal(t, StartWarm, warmPass(t, r).Start)
}

func TestWarmSessionOfAKilledZygoteSaysSo(t *testing.T) {
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: 1})
	py := zygoteOf(t, r, "default").py
	s, err := r.StartSession(context.Background(), &Spec{Program: []byte(miniSession), Limits: DefaultLimits(), ID: NewSessionID(), Start: StartWarm})
	require.NoError(t, err)
	t.Cleanup(func() { s.End(EndDeleted); _ = s.Wait() })
	require.Equal(t, StartWarm, s.Start)
	answer := make(chan error, 1)
	go func() {
		_, err := s.Call(context.Background(), &CallSpec{Payload: []byte("import time\ntime.sleep(30)"), Limits: callLimits})
		answer <- err
	}()
	time.Sleep(500 * time.Millisecond)
	require.NoError(t, syscall.Kill(py, syscall.SIGKILL))
	select {
	case err := <-answer:
		requireRuntimeFailed(t, err, "died")
	case <-time.After(10 * time.Second):
		t.Fatal("no answer 10 s after the zygote's death")
	}
	assert.Equal(t, EndRuntime, s.Ended(), "not exited: the program did not end the session")
}
