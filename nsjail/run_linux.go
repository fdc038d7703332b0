package nsjail

import (
	"context"
	"errors"
	"runtime"
)

// Runner.Run, top to bottom: the spec checked (checkedSpec); a warm run
// (runWarm), else a prepared jail (takePrepared, prepared_linux.go), else
// a jail started for this run alone (runCold). Each ends in its flow's
// run: a coldFlow's (flow_linux.go) or a warm run's warmFlow's
// (warm_run_linux.go).

// ErrCleanup marks a run whose result is valid but whose cgroup could not
// be removed; a later start-up sweep (Manager.Stale) removes it.
var ErrCleanup = errors.New("jail cleanup failed")

// Run runs one program and returns its result. A program that fails or is
// killed is a Result, not an error; an error means the jail could not be
// set up (a *StageError or a *FieldError). When ctx is cancelled the jail is
// killed with KillCancelled, or with the KillReason given as the cause.
func (r *Runner) Run(ctx context.Context, s *Spec) (*Result, error) {
	spec, b, err := checkedSpec(s, NewID)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	code := codeFiles(&spec)
	if spec.Start == StartWarm {
		if res, err, ok := r.runWarm(ctx, &spec, b, code); ok {
			return res, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	if pj, rest := r.takePrepared(b, spec.Etc, code); pj != nil {
		res, err := pj.run(ctx, &spec, rest)
		// Not delivered means that nothing of the program ran (it is
		// started only after msgGo), and run has removed the jail and
		// its cgroup: a retry has nothing of this one to clean.
		if !errors.Is(err, errNotDelivered) {
			return res, err
		}
		// The prepared jail was gone before it got the request (killed
		// while it waited): nothing of the request ran; start afresh.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return r.runCold(ctx, &spec, b, code)
}

// checkedSpec is a copy of s with its defaults filled in (an ID from
// newID), validated, its interpreter checked on the host; b are the
// directories its jail binds.
func checkedSpec(s *Spec, newID func() string) (spec Spec, b []string, err error) {
	spec = *s
	if spec.ID == "" {
		spec.ID = newID()
	}
	if spec.Python == "" {
		spec.Python = DefaultPython
	}
	spec.Limits = spec.Limits.withDefaults()
	if err := spec.Validate(); err != nil {
		return spec, nil, err
	}
	b = binds(&spec)
	return spec, b, checkPython(spec.Python, b)
}

func markCold(res *Result) *Result {
	if res != nil {
		res.Start = StartCold
	}
	return res
}

// runCold starts a jail for this spec alone and runs it.
func (r *Runner) runCold(ctx context.Context, spec *Spec, binds []string, code []File) (*Result, error) {
	uid, err := r.UIDs.Acquire()
	if err != nil {
		return nil, err
	}
	defer r.UIDs.Release(uid)
	// The jail dies with this thread (Pdeathsig): it stays locked until
	// the jail has been waited for.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	j := newJail(r, uid)
	if err := j.flow.start(j, r.build(jailBase{binds: binds, etc: spec.Etc}, spec.Limits.TmpBytes)); err != nil {
		return nil, errors.Join(err, j.cleanup())
	}
	return j.flow.run(ctx, j, spec, requestConfigFor(spec, code))
}

// runWarm runs s as a fork of its runtime's zygote: a run forked ahead
// when one waits, else one forked now. ok is false when none could be
// had (no zygote up): the caller runs it cold.
func (r *Runner) runWarm(ctx context.Context, s *Spec, b []string, code []File) (res *Result, err error, ok bool) {
	w := r.warmFor(b, s.Etc)
	if w == nil {
		return nil, nil, false
	}
	rest, fits := withoutShared(code, w.base.shared)
	if !fits {
		return nil, nil, false
	}
	cfg := requestConfigFor(s, rest)
	if pj, fillNow := w.pool.takeWarm(); pj != nil {
		if fillNow {
			w.pool.fill(r)
		}
		res, err := pj.runWith(ctx, s, cfg)
		if !errors.Is(err, errNotDelivered) {
			return res, err, true
		}
	}
	uid, err := r.UIDs.Acquire()
	if err != nil {
		return nil, err, true
	}
	defer r.UIDs.Release(uid)
	// The bootstrap dies with this thread (Pdeathsig): it stays locked
	// until startRun has waited for it (nestedInit.threadBound).
	runtime.LockOSThread()
	j := newJail(r, uid)
	err = w.startRun(j, w.pool.build)
	runtime.UnlockOSThread()
	if err != nil {
		_ = j.cleanup()
		if errors.Is(err, errNoZygote) {
			w.fallback.Add(1)
			return nil, nil, false
		}
		return nil, err, true
	}
	res, err = j.flow.run(ctx, j, s, cfg)
	return res, err, true
}

func markWarm(res *Result) *Result {
	if res != nil {
		res.Start = StartWarm
		if res.PeakMemorySource != "" {
			res.PeakMemorySource += WarmPeakSuffix
		}
	}
	return res
}

// WarmPeakSuffix ends a warm run's PeakMemorySource: the same counter as
// a cold run's, but a fork's pages that it only reads (its zygote's
// interpreter and preloaded modules) are charged to the zygote; what it
// allocates or writes (copies of the zygote's pages included) is its own.
const WarmPeakSuffix = " (warm fork)"
