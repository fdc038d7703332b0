package nsjail

import (
	"errors"
	"os"
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

// runGuard is what, beyond a run's own limits, may fail the work of a
// jail, and what the jail holds of it until its clean-up: a warm run's
// zygote (zygoteGuard); nothing for a cold jail (noGuard). The shared
// steps call it: a run's watchdog and a session's life watch it
// (jail.watchJail), supervise and a session ask it how the jail ended, the
// prepared pool whether a jail may still be taken, and the clean-up gives
// it back.
type runGuard interface {
	// watch starts watching what else may fail the run, until done is
	// closed.
	watch(done <-chan struct{})
	// failure is what did, once pid 1 has ended (ok: it sent msgExit);
	// failed what failure found so far.
	failure(j *jail, ok bool) error
	failed() error
	// retiring tells whether what the jail was made from makes no more:
	// a prepared jail of it is not to be taken.
	retiring() bool
	// release gives it back, once pid 1 is gone.
	release()
}

// noGuard is a cold jail's: nothing but its own limits fails it.
type noGuard struct{}

func (noGuard) watch(<-chan struct{})     {}
func (noGuard) failure(*jail, bool) error { return nil }
func (noGuard) failed() error             { return nil }
func (noGuard) retiring() bool            { return false }
func (noGuard) release()                  {}

// zygoteGuard is what a warm run knows of its zygote's failure.
type zygoteGuard struct {
	z *zygote // the run's zygote, until release
	// prog is a pidfd of the run's program, once forked: the jail's, in
	// its closers; borrowed here.
	prog *os.File

	mu  sync.Mutex
	why string // "" while the zygote serves
}

func (g *zygoteGuard) fail(why string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.why == "" {
		g.why = why
	}
}

// watch watches a warm run's zygote, on a goroutine of its own, until
// done (closed once the jail has been waited for): when the program has
// ended (its pidfd says so) and the jail has not ended zygoteReapGrace
// later, the zygote is taken for stalled and killed, which ends the jail.
// Nothing is watched for a run whose program was never forked; the
// goroutine ends when the program ends, or its pidfd is closed (the
// jail's clean-up). What it reads of g is read here, before the clean-up
// can clear it.
func (g *zygoteGuard) watch(done <-chan struct{}) {
	z, prog := g.z, g.prog
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
			g.fail("its zygote did not reap the run's program within " + zygoteReapGrace.String() + " of its end (stopped or hung); the zygote was killed")
			z.j.kill(KillCancelled)
		}
	}()
}

// failure is the warm runtime's failure that ended the jail, once it has
// ended: its zygote stalled (watch), or died during the run, when pid 1
// sent no msgExit (ok false) and no limit or caller of the run's killed
// it. nil when the zygote did not fail the run.
func (g *zygoteGuard) failure(j *jail, ok bool) error {
	if g.z == nil {
		return nil
	}
	if !ok && j.killReason() == KillNone {
		select {
		case <-g.z.done: // it dies with its jail, whose end comes soon after the run's
			g.fail("its zygote died during the run (killed from outside, or crashed)")
		case <-time.After(2 * time.Second):
		}
	}
	return g.failed()
}

// failed is the failure that failure found; nil when none.
func (g *zygoteGuard) failed() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.why == "" {
		return nil
	}
	return &StageError{Stage: "warm runtime", Msg: ErrZygoteFailed.Error() + ": " + g.why + "; a new zygote is being started: retry"}
}

// retiring: the run's zygote forks no more runs; false once released.
func (g *zygoteGuard) retiring() bool { return g.z != nil && g.z.isRetiring() }

// release gives the run back to its zygote (a retired one ends with its
// last run).
func (g *zygoteGuard) release() {
	if g.z != nil {
		g.z.runEnded()
		g.z = nil
	}
}
