package nsjail

import (
	"errors"
	"runtime"
)

// How a session gets its jail (Runner.StartSession): warm, prepared, or
// started now, held for the session's whole life.

// lease is a started jail that a session holds for its whole life, and how
// to give it back once it has been waited for and cleaned up.
type lease struct {
	j       *jail
	start   StartMode
	release func()
}

// leaseJail is a jail for a session: a warm run (forked ahead, or now)
// when the spec asks for one and a zygote of its runtime is up; else a
// prepared jail; else one started now (fresh: only that). rest are the
// files of code the jail does not hold yet. A jail taken from a pool is
// replaced at once: a session holds it for long.
func (r *Runner) leaseJail(spec *Spec, b []string, code []File, fresh bool) (*lease, []File, error) {
	if spec.Start == StartWarm && !fresh {
		if w := r.warmFor(b, spec.Etc); w != nil {
			if rest, fits := withoutShared(code, w.base.shared); fits {
				if pj := w.pool.take(); pj != nil {
					w.pool.fill(r)
					return pj.lease(StartWarm), rest, nil
				}
				uid, err := r.UIDs.Acquire()
				if err != nil {
					return nil, nil, err
				}
				j := newJail(r, uid)
				end, err := j.startOwned(func() error { return w.startRun(j, w.pool.build) })
				if err == nil {
					return &lease{j: j, start: StartWarm, release: func() { close(end); r.UIDs.Release(uid) }}, rest, nil
				}
				r.UIDs.Release(uid)
				if !errors.Is(err, errNoZygote) {
					return nil, nil, err
				}
				w.fallback.Add(1)
			}
		}
	}
	if p := r.poolFor(b, spec.Etc); p != nil && !fresh {
		if rest, fits := withoutShared(code, p.base.shared); fits {
			if pj := p.take(); pj != nil {
				p.fill(r)
				return pj.lease(StartCold), rest, nil
			}
		}
	}
	uid, err := r.UIDs.Acquire()
	if err != nil {
		return nil, nil, err
	}
	j := newJail(r, uid)
	built := r.build(jailBase{binds: b, etc: spec.Etc}, spec.Limits.TmpBytes)
	end, err := j.startOwned(func() error { return j.flow.start(j, built) })
	if err != nil {
		r.UIDs.Release(uid)
		return nil, nil, err
	}
	return &lease{j: j, start: StartCold, release: func() { close(end); r.UIDs.Release(uid) }}, code, nil
}

// lease hands a prepared jail to a session: its keeper (preparedPool.keep)
// waits until the session gives it back.
func (pj *preparedJail) lease(start StartMode) *lease {
	return &lease{j: pj.j, start: start, release: func() {
		pj.j.runner.UIDs.Release(pj.j.uid)
		pj.ended <- true
	}}
}

// startOwned starts j (start: its flow's, or a warm run's startRun) on a
// goroutine of its own with its OS thread locked, for a jail that
// outlives the call that starts it. If the jail's parent-death signal is
// tied to that thread (pid1.threadBound), the goroutine keeps it locked
// until end is closed; else it ends after the start. A start that fails
// is cleaned up there.
func (j *jail) startOwned(start func() error) (end chan struct{}, err error) {
	started := make(chan error, 1)
	end = make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := start()
		if err != nil {
			err = errors.Join(err, j.cleanup())
		}
		// Read before the jail is the caller's: a warm one needs this
		// thread no more, and the goroutine ends now.
		bound := err == nil && j.pid1.threadBound()
		started <- err
		if bound {
			<-end
		}
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return end, nil
}
