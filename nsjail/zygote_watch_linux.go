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

// watchZygote watches a warm jail's zygote until done (closed once the
// jail has been waited for): when the program has ended (its pidfd says
// so) and the jail has not ended zygoteReapGrace later, the zygote is
// taken for stalled and killed, which ends the jail. It returns at once
// for a jail that is not warm; else when the program ends, or its pidfd is
// closed (the jail's clean-up).
func (j *jail) watchZygote(done <-chan struct{}) {
	z := j.zygote
	if !j.warm || z == nil || j.progFD == nil {
		return
	}
	awaitPidfd(j.progFD)
	t := time.NewTimer(zygoteReapGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		j.zw.fail("its zygote did not reap the run's program within " + zygoteReapGrace.String() + " of its end (stopped or hung); the zygote was killed")
		z.j.kill(KillCancelled)
	}
}

// zygoteFailure is the warm runtime's failure that ended the jail, once
// it has ended: its zygote stalled (watchZygote), or died during the run,
// when pid 1 sent no msgExit (ok false) and no limit or caller of the
// run's killed it. nil when the zygote did not fail the run.
func (j *jail) zygoteFailure(ok bool) error {
	if !j.warm || j.zygote == nil {
		return nil
	}
	if !ok && j.killReason() == KillNone {
		select {
		case <-j.zygote.done: // it dies with its jail, whose end comes soon after the run's
			j.zw.fail("its zygote died during the run (killed from outside, or crashed)")
		case <-time.After(2 * time.Second):
		}
	}
	return j.zygoteError()
}

// zygoteError is the failure zygoteFailure found; nil when none.
func (j *jail) zygoteError() error {
	j.zw.mu.Lock()
	defer j.zw.mu.Unlock()
	if j.zw.why == "" {
		return nil
	}
	return &StageError{Stage: "warm runtime", Msg: ErrZygoteFailed.Error() + ": " + j.zw.why + "; a new zygote is being started: retry"}
}
