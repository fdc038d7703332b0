package nsjail

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"runtime"
	"slices"
	"sync"
	"time"
)

// Prepared jails. Starting the init stage (exec, the bootstrap's user and
// pid namespaces and uid map, four more namespaces) and building the
// file system take about 2 ms, none of which depends on the request. A Runner can
// keep jails prepared that far ahead, each waiting on its sync socket
// (protocol.go) for the request's part: the program, stdio, limits. Python
// itself is never started ahead: every run is still a fresh interpreter
// exec'd into a fresh jail that no other request has touched, and every
// jail serves one request only.

// PreparedTemplate says which requests a Runner's prepared jails fit.
type PreparedTemplate struct {
	// Name tells the Runner's pools apart (an environment's name): one
	// pool per name.
	Name string
	// ReadOnlyMounts and Etc as in Spec: a request must have the same
	// (Etc: the same *Etc).
	ReadOnlyMounts []string
	Etc            *Etc
	// Code are files under /code that every request has, with the same
	// content (the daemon's harness); they are written ahead.
	Code []File
	// Limits are the ones most requests have (the daemon's defaults;
	// zero fields take DefaultLimits'). The scratch tmpfs is prepared at
	// Limits.TmpBytes, and on cgroup v1 each jail's cgroup is made ahead
	// with Limits' memory, pids and CPU limits (its name is the request's
	// ID from the request on: v1 can rename). A request with another
	// scratch size costs one remount, one with other cgroup limits a group
	// made during its run.
	Limits Limits
	// OnError, when set, hears why a jail could not be prepared: once per
	// streak of failures (requests meanwhile start their own jails). It
	// runs on the pool's own goroutine: it must return soon (log, count),
	// or Close waits for it, and must not panic.
	OnError func(error)
}

type preparedPool struct {
	want    int
	base    jailBase
	limits  Limits
	onError func(error)
	build   built // the same for every jail of the pool
	// start, when set, starts each jail with build instead of its flow's
	// (a warm runtime's: a fork of its zygote).
	start func(j *jail, b built) error

	mu       sync.Mutex
	ready    []*preparedJail
	starting int
	closed   bool
	lastErr  error
	backoff  time.Duration // before the next attempt after a failed start; 0 after a success
	retry    *time.Timer
	wg       sync.WaitGroup
	// running counts the warm runs taken from the pool (takeWarm) and
	// not yet ended; lastEnd is when the last one ended.
	running int
	lastEnd time.Time
}

// Retries after a failed start wait from minRetry, doubling up to maxRetry.
const (
	minRetry = time.Second
	maxRetry = time.Minute
)

// preparedJail is a started, prepared jail. The goroutine that started it
// waits for its end, parked on ended, and keeps its OS thread locked till
// then if the jail is tied to that thread (pid1.threadBound: a cold one);
// the request runs on its own goroutine, so that none of the run's many
// waits hands the work over to that one thread and back (the daemon's CPU
// per run, three alternating runs of 300: 1.97, 1.73, 1.80 ms before,
// 1.67, 1.77, 1.60 after).
type preparedJail struct {
	j       *jail
	ended   chan bool // true: a run has waited for the jail; closed: end it unused
	warmRun bool      // taken by takeWarm: counted in the pool's running
}

// KeepPrepared keeps n jails prepared for requests that fit t, replacing
// each as it is taken. It replaces a previous call's pool of the same
// t.Name (its waiting jails end; it waits for runs in progress in them);
// n = 0 only stops that one. Close ends them all. The Runner's Seccomp,
// RootDir, Exe and ExeFile and the host's links are read now: set them
// before, and call KeepPrepared again after changing one, or prepared
// jails keep the old ones.
func (r *Runner) KeepPrepared(n int, t PreparedTemplate) {
	p := &preparedPool{
		want:    n,
		base:    jailBase{binds: binds(&Spec{ReadOnlyMounts: t.ReadOnlyMounts}), etc: t.Etc, shared: slices.Clone(t.Code)},
		limits:  t.Limits.withDefaults(),
		onError: t.OnError,
	}
	p.build = r.build(p.base, p.limits.TmpBytes)
	r.poolMu.Lock()
	if r.pools == nil {
		r.pools = map[string]*preparedPool{}
	}
	old := r.pools[t.Name]
	r.pools[t.Name] = p
	if n <= 0 {
		delete(r.pools, t.Name)
	}
	r.poolMu.Unlock()
	if old != nil {
		old.close()
	}
	if n > 0 {
		p.fill(r)
	}
}

// Close ends the prepared jails and waits for them to be gone. It also
// waits for runs in progress in prepared jails (a daemon calls it after
// its own shutdown has ended, or killed, them), and for the release of the
// finished jails' mount namespaces.
func (r *Runner) Close() {
	r.poolMu.Lock()
	pools, warm := r.pools, r.warm
	r.pools, r.warm = nil, nil
	r.poolMu.Unlock()
	for _, p := range pools {
		p.close()
	}
	for _, w := range warm {
		w.close()
	}
	r.teardowns.Wait()
	r.closeEtcTrees()
}

// PreparedStats tells how many jails are prepared and waiting, in every
// pool, and the last error that kept one from being prepared (nil when
// the last start of each pool worked).
func (r *Runner) PreparedStats() (ready int, lastErr error) {
	r.poolMu.Lock()
	pools := slices.Collect(maps.Values(r.pools))
	r.poolMu.Unlock()
	for _, p := range pools {
		p.mu.Lock()
		ready += len(p.ready)
		if p.lastErr != nil {
			lastErr = p.lastErr
		}
		p.mu.Unlock()
	}
	return ready, lastErr
}

func (p *preparedPool) close() {
	p.mu.Lock()
	p.closed = true
	ready := p.ready
	p.ready = nil
	if p.retry != nil {
		p.retry.Stop()
	}
	p.mu.Unlock()
	for _, pj := range ready {
		close(pj.ended)
	}
	p.wg.Wait()
}

// drop ends the ready jails that match; each one's keep starts its
// replacement once its uid is free.
func (p *preparedPool) drop(match func(*jail) bool) {
	p.mu.Lock()
	var dropped []*preparedJail
	p.ready = slices.DeleteFunc(p.ready, func(pj *preparedJail) bool {
		if match(pj.j) {
			dropped = append(dropped, pj)
			return true
		}
		return false
	})
	p.mu.Unlock()
	for _, pj := range dropped {
		close(pj.ended)
	}
}

// fill starts jails until want are ready or starting.
func (p *preparedPool) fill(r *Runner) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.closed && len(p.ready)+p.starting < p.want {
		p.starting++
		p.wg.Add(1)
		go p.keep(r)
	}
}

// keep prepares one jail and waits until a request's run
// (preparedJail.run) has waited for it, or the pool ends it unused. Its
// OS thread stays locked that long for a cold jail; for a warm run's, only
// until the start (pid1.threadBound).
func (p *preparedPool) keep(r *Runner) {
	defer p.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	uid, err := r.UIDs.Acquire()
	if err != nil {
		p.started(r, nil, err)
		return
	}
	j := newJail(r, uid)
	if p.start != nil {
		err = p.start(j, p.build)
	} else {
		err = j.flow.start(j, p.build)
	}
	if err == nil && !j.pid1.threadBound() {
		// Its bootstrap has been waited for: nothing of the jail dies
		// with this thread. (The deferred unlock is then a no-op.)
		runtime.UnlockOSThread()
	}
	if err == nil {
		err = j.flow.prepare(j, p.limits) // a warm run's program is forked ahead too
	}

	if err != nil {
		err = errors.Join(err, j.cleanup())
		r.UIDs.Release(uid)
		p.started(r, nil, err)
		return
	}
	pj := &preparedJail{j: j, ended: make(chan bool, 1)}
	if !p.started(r, pj, nil) || !p.await(pj) {
		// The pool closed before a request took it, or dropped it (its
		// zygote retired): the init stage is killed and waited for, and
		// a dropped jail replaced.
		retired := j.guard.retiring() // read before the clean-up releases its zygote
		_ = j.cleanup()
		r.UIDs.Release(uid)
		if retired {
			p.fill(r)
		}
		return
	}
	// The replacement starts only now: a start (exec, namespaces, mounts)
	// beside a running jail slows that jail's set-up and its python
	// (BENCHMARKS.md). (A warm run under a stream of requests has it
	// started at its take already, takeWarm; this fill then finds the
	// pool full.)
	p.fill(r)
}

// await waits until a run (or a session) has waited for pj (true) or the
// pool ends it unused (false), and counts a takeWarm run's end.
func (p *preparedPool) await(pj *preparedJail) bool {
	if !<-pj.ended {
		return false
	}
	if pj.warmRun {
		p.mu.Lock()
		p.running--
		p.lastEnd = time.Now()
		p.mu.Unlock()
	}
	return true
}

// started records the end of a start: pj joins the ready jails unless the
// start failed or the pool closed meanwhile (false: the caller ends it).
// After a failure the pool tries again later, backing off.
func (p *preparedPool) started(r *Runner, pj *preparedJail, err error) bool {
	p.mu.Lock()
	p.starting--
	first := err != nil && p.lastErr == nil && !p.closed
	p.lastErr = err
	// A warm run of a zygote retired meanwhile is not taken: drop, which
	// ends the retired zygote's, may have run before it was ready. (The
	// order of locks: p.mu, then the zygote's; never the other way.)
	ok := pj != nil && !p.closed && (pj.j == nil || !pj.j.guard.retiring())
	if ok {
		p.ready = append(p.ready, pj)
		p.backoff = 0
	}
	if err != nil && !p.closed && p.retry == nil {
		p.backoff = min(max(2*p.backoff, minRetry), maxRetry)
		p.retry = time.AfterFunc(p.backoff, func() {
			p.mu.Lock()
			p.retry = nil
			p.mu.Unlock()
			p.fill(r)
		})
	}
	p.mu.Unlock()
	if first && p.onError != nil {
		p.onError(err)
	}
	return ok
}

// takePrepared returns a prepared jail that fits a run with these binds,
// /etc and /code files, and the files it still lacks; nil when none is
// ready. Its replacement starts when its run has ended.
func (r *Runner) takePrepared(binds []string, etc *Etc, code []File) (*preparedJail, []File) {
	p := r.poolFor(binds, etc)
	if p == nil {
		return nil, nil
	}
	rest, ok := withoutShared(code, p.base.shared)
	if !ok {
		return nil, nil
	}
	pj := p.take()
	if pj == nil {
		return nil, nil
	}
	return pj, rest
}

// poolFor is the pool of prepared jails with these binds and /etc; nil
// when there is none.
func (r *Runner) poolFor(binds []string, etc *Etc) *preparedPool {
	r.poolMu.Lock()
	defer r.poolMu.Unlock()
	for _, q := range r.pools {
		if q.base.etc == etc && slices.Equal(q.base.binds, binds) {
			return q
		}
	}
	return nil
}

// take is a ready jail of the pool, nil when none is.
func (p *preparedPool) take() *preparedJail {
	p.mu.Lock()
	defer p.mu.Unlock()
	// The oldest first: no jail waits for ever under a steady load (with
	// binds made, and a start time set, long before its request).
	return p.popOldest()
}

// popOldest takes the oldest ready jail (nil: none, or the pool is
// closed); p.mu is held.
func (p *preparedPool) popOldest() *preparedJail {
	if len(p.ready) == 0 || p.closed {
		return nil
	}
	pj := p.ready[0]
	p.ready = slices.Delete(p.ready, 0, 1)
	return pj
}

// streamGap: a warm run taken less than this after the pool's last run
// ended, or while another runs, belongs to a stream of requests
// (takeWarm). A jail's build takes about 3 ms.
const streamGap = 5 * time.Millisecond

// takeWarm is take for a warm run; fillNow says whether its replacement
// should be built now, beside the run, or after it (keep). A build beside
// a warm run slows it by a fifth (a kept-alive `pass`: 7.5 ms against 6.1
// ms, BENCHMARKS.md): when requests come one at a time, apart, as an
// agent's tool calls do, the replacement is built after the run, in the
// gap before the next. Under a stream (another run in progress, or the
// last one ended just now), or when no other jail is ready or starting,
// it is built now: the next request then finds it ready, and a build
// after each run would delay the next one instead (the corpus at 1
// client: 9% fewer programs per second).
func (p *preparedPool) takeWarm() (pj *preparedJail, fillNow bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	stream := p.running > 0 || time.Since(p.lastEnd) < streamGap
	if pj = p.popOldest(); pj == nil {
		return nil, false
	}
	p.running++
	pj.warmRun = true
	return pj, stream || len(p.ready)+p.starting == 0
}

// withoutShared is code without the shared files, which must all be in
// it with the same content (false otherwise).
func withoutShared(code, shared []File) ([]File, bool) {
	if len(shared) == 0 {
		return code, true
	}
	rest := make([]File, 0, len(code))
	found := 0
	for _, f := range code {
		i := slices.IndexFunc(shared, func(s File) bool { return s.Path == f.Path })
		switch {
		case i < 0:
			rest = append(rest, f)
		case bytes.Equal(shared[i].Content, f.Content):
			found++
		default:
			return nil, false
		}
	}
	return rest, found == len(shared)
}

// run runs the request in the jail, then lets its goroutine go, also
// when the flow's run panics (after it has waited for the jail:
// jail.settle).
func (pj *preparedJail) run(ctx context.Context, spec *Spec, code []File) (*Result, error) {
	return pj.runWith(ctx, spec, requestConfigFor(spec, code))
}

// runWith is run with the request's config made.
func (pj *preparedJail) runWith(ctx context.Context, spec *Spec, cfg *requestConfig) (*Result, error) {
	defer func() {
		// The jail has been waited for and cleaned up: its uid is free
		// before the answer goes out, so that neither the next request
		// nor the replacement finds the range short by this one.
		pj.j.runner.UIDs.Release(pj.j.uid)
		pj.ended <- true
	}()
	res, err := pj.j.flow.run(ctx, pj.j, spec, cfg)
	if res != nil {
		res.Prepared = true
	}
	return res, err
}
