package nsjail

import (
	"errors"
	"sync"
	"time"
)

// A zygote that fails its warm runs. A warm run's program is the
// zygote's child: its end is known, and its jail ends, only once the
// zygote has reaped it (programStatus). A zygote that stalls (stopped,
// hung) would hold the run, and its slot, past every limit; a zygote that
// dies takes its runs with it, SIGKILLed by the kernel, which no limit of
// the run's did. Neither is the program's doing: the run's answer names
// the warm runtime's failure (a *StageError, stage "warm runtime", that
// says ErrZygoteFailed), never a status of the program, and a session
// ends with EndRuntime. A stalled zygote is killed, which ends its runs'
// jails; either way the runtime starts a new zygote (startZygote).

// ErrZygoteFailed is a warm run's zygote that died or stalled during the
// run.
var ErrZygoteFailed = errors.New("the warm runtime failed")

// EndRuntime: a warm session's zygote died or stalled (ErrZygoteFailed).
const EndRuntime EndReason = "runtime_failed"

// zygoteReapGrace is how long a zygote may take to reap a run's program
// that has ended (it does at its next SIGCHLD) before it is taken for
// stalled and killed.
const zygoteReapGrace = 3 * time.Second

// zygoteWatch is what a warm jail knows of its zygote's failure.
type zygoteWatch struct {
	mu  sync.Mutex
	why string // "" while the zygote serves
}

func (w *zygoteWatch) fail(why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.why == "" {
		w.why = why
	}
}

// watch watches a warm run's zygote, on a goroutine of its own, until
// done (closed once the jail has been waited for): when the program has
// ended (its pidfd says so) and the jail has not ended zygoteReapGrace
// later, the zygote is taken for stalled and killed, which ends the jail.
// Nothing is watched for a run whose program was never forked; the
// goroutine ends when the program ends, or its pidfd is closed (the
// jail's clean-up). What it reads of f is read here, before the clean-up
// can clear it.
func (f *warmFlow) watch(_ *jail, done <-chan struct{}) {
	z, prog := f.z, f.progFD
	if z == nil || prog == nil {
		return
	}
	go func() {
		awaitPidfd(prog)
		t := time.NewTimer(zygoteReapGrace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			f.zw.fail("its zygote did not reap the run's program within " + zygoteReapGrace.String() + " of its end (stopped or hung); the zygote was killed")
			z.j.kill(KillCancelled)
		}
	}()
}

// failure is the warm runtime's failure that ended the jail, once it has
// ended: its zygote stalled (watch), or died during the run, when pid 1
// sent no msgExit (ok false) and no limit or caller of the run's killed
// it. nil when the zygote did not fail the run.
func (f *warmFlow) failure(j *jail, ok bool) error {
	if f.z == nil {
		return nil
	}
	if !ok && j.killReason() == KillNone {
		select {
		case <-f.z.done: // it dies with its jail, whose end comes soon after the run's
			f.zw.fail("its zygote died during the run (killed from outside, or crashed)")
		case <-time.After(2 * time.Second):
		}
	}
	return f.failed()
}

// failed is the failure that failure found; nil when none.
func (f *warmFlow) failed() error {
	f.zw.mu.Lock()
	defer f.zw.mu.Unlock()
	if f.zw.why == "" {
		return nil
	}
	return &StageError{Stage: "warm runtime", Msg: ErrZygoteFailed.Error() + ": " + f.zw.why + "; a new zygote is being started: retry"}
}
