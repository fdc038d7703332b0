package nsjail

import (
	"bufio"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"agentjail/seccomp"
)

// Warm runs. A zygote is a python3 of one environment, in a jail of its
// own (a cold jail under seccomp's ZygotePolicy), that imported the
// environment's modules ahead and never runs request code. Each warm run
// is a jail like a cold one (warmFlow.start: the bootstrap and the C init
// stage build it, ahead of its request), whose user and pid namespaces
// are made inside its zygote's (nested), and whose program is not exec'd
// but forked from the zygote into the jail's namespaces: before any of the
// request's code runs it has everything a cold jail's program has, its
// own user namespace (the run's own host uid, seen as 1000 inside), pid,
// mount, network, IPC, UTS and cgroup namespaces, its own cgroup, a fresh
// /proc, /code and scratch tmpfs, no capability, no_new_privs and the
// run's seccomp filter with its own listener.
//
//	daemon                       the run's init (C)       zygote (python3)
//	  start (nestEnv, fd nestFd: a pidfd of the zygote's jail's pid 1):
//	  the bootstrap joins the zygote's user and pid namespaces and makes
//	  the jail's inside them; pid 1 reports itself with its credentials
//	  -- msgBuild (+ /etc) ------>  the jail's file system,
//	                                as a cold jail's
//	  <-- msgReady + mount, pid,
//	      user, net, ipc, uts ----
//	  -- zFork (payload: the run's uid; fds: the program's socket,
//	     the six namespaces) ----------------------------------------->
//	                                          setns into the jail's pid
//	                                          namespace (for its next
//	                                          child), fork, setns back;
//	                                          the fork: its own session,
//	                                          the run's uid, setns into the
//	                                          jail's user, mount, net, ipc,
//	                                          uts; its bounding set
//	                                          emptied; the request path's
//	                                          first steps run once, dry,
//	                                          and its random reseeded
//	  <-- msgReady (its credentials: the fork's pid), on the program's
//	      socket -----------------------------------------------------
//	  (the run waits here for its request: runs built ahead)
//	  -- msgRequest (adoptPlan: files) ->
//	  -- msgGo (v1: tasks files) ------>  joins the group, drops every
//	  <-- msgReady --------------------   capability, no_new_privs
//	  -- msgRequest (programPlan + stdio), then msgGo (v1: the same tasks
//	     files; v2: moved by its pid first), on the program's socket ->
//	                                          the fork: stdio, rlimits, the
//	                                          group, cgroup namespace,
//	                                          capabilities dropped,
//	                                          no_new_privs, the filter
//	  <-- msgSeccomp, msgExec (from the fork) --------------------------
//	  -- msgAdopt -------------------->  watches pid 2 (the fork)
//	                                          ... the program runs ...
//	                                     exits when it ends: the kernel
//	                                     kills the rest of the jail
//	  <-- msgExit (the program's wait status, on its socket): its parent,
//	      the zygote, reaped it ----------------------------------------
//
// The run's init is not this process's child but an orphan of the
// zygote's pid namespace, which the zygote's jail's init reaps: it is
// held by a pidfd, and has no parent-death signal. It dies with the
// zygote's jail (whose pid 1 dies with this process's thread that started
// it): the kernel kills the processes of a pid namespace and of every one
// inside it when its init ends. The program is pid 2 of the jail's pid
// namespace; its parent (the zygote) is outside it: getppid() is 0 in the
// program, as in a process entered with setns.

// zygoteName is the zygote's program under its /code.
const zygoteName = "agentjail_zygote.py"

// The zygote's messages on its control socket (zygote.py's Z_*).
const (
	zReady msgType = 101 // the zygote's imports are done: ZygoteInfo as JSON
	zFork  msgType = 102 // fork a run's program: its uid (payload); its socket, then the run's mount, pid, user, net, ipc and uts namespaces (SCM_RIGHTS)
)

// ZygoteSpec is one environment's warm interpreter.
type ZygoteSpec struct {
	Name           string            // the environment's name (the Runner keeps one zygote per name)
	Python         string            // as Spec.Python
	ReadOnlyMounts []string          // as Spec.ReadOnlyMounts
	Etc            *Etc              // as Spec.Etc
	Env            map[string]string // the environment's variables (Spec.DefaultEnv); the zygote's too
	Preload        []string          // modules the zygote imports ahead
	// Code are files under /code that every run has (the daemon's
	// harness); Entry, when not "", is one of them that the zygote loads:
	// its zygote() is called once, its main() runs each run's program
	// (else the program file is run as __main__).
	Code  []File
	Entry string
	// Limits are the zygote's own: memory for its imports and its runs'
	// set-up, pids for the runs it has forked and not yet handed over
	// (zero fields: zygoteLimits).
	Limits Limits
	// RunLimits are the limits most runs have (the daemon's defaults): the
	// scratch tmpfs of runs forked ahead, and their cgroup made ahead on
	// v1 (PreparedTemplate.Limits).
	RunLimits Limits
	Ahead     int // runs forked and built ahead of requests
	MaxForks  int // forks before the zygote is retired and replaced (0: never)
	// OnEvent, when set, hears of the zygote's life: started, failed (with
	// the error), retired. It runs on the zygote's own goroutines: it must
	// return soon.
	OnEvent func(event string, err error)
}

// ZygoteInfo is what a zygote reports once its imports are done.
type ZygoteInfo struct {
	Python  string            `json:"python"`  // python's version, e.g. "3.11.2"
	Preload map[string]string `json:"preload"` // module -> "" when it imported, else the error
	Entry   string            `json:"entry"`   // the entry's error, "" when it loaded
	Error   string            `json:"error"`   // why the zygote cannot serve (threads or shared writable memory left by its imports), "" when it can
	Loop    string            `json:"loop"`    // "c" when it serves its forks from Runner.ZygoteLoop, else why it serves from its python loop
}

// zygoteLimits are a zygote's own limits where ZygoteSpec.Limits leaves
// one at zero.
func zygoteLimits(l Limits, ahead int) Limits {
	// No wall or CPU watchdog ever runs for a zygote: those two only
	// have to be valid. Its CPU bandwidth is the host's, so that its runs'
	// set-up (done in its group until they join their own) is not slowed.
	d := Limits{
		MemoryBytes: 4 << 30, WallTime: time.Hour, CPUTime: time.Hour, Pids: int64(64 + 4*ahead),
		OutputBytes: 1 << 20, TmpBytes: 16 << 20, OpenFiles: 1024, FileSizeBytes: 1 << 20,
		CPUs: float64(runtime.NumCPU()),
	}
	if l.MemoryBytes > 0 {
		d.MemoryBytes = l.MemoryBytes
	}
	if l.Pids > 0 {
		d.Pids = l.Pids
	}
	if l.CPUs > 0 {
		d.CPUs = l.CPUs
	}
	return d
}

// warmRuntime is one environment's zygote and its runs forked ahead.
type warmRuntime struct {
	r    *Runner
	spec ZygoteSpec
	base jailBase // the runs': binds, /etc, the shared code
	pool *preparedPool
	// formerEtc are the /etc of the runtimes of this name it replaced
	// (KeepWarm), latest first: a request made just before the
	// replacement still names one, and runs warm here.
	formerEtc []*Etc

	mu  sync.Mutex
	cur *zygote // nil while none is up
	// prev is the runtime this one replaced (KeepWarm of the same name):
	// it serves this one's requests until this one's zygote is up, then
	// it is closed.
	prev     *warmRuntime
	starting bool
	closed   bool
	backoff  time.Duration
	restarts atomic.Int64 // zygotes started after the first
	fallback atomic.Int64 // warm requests run cold (no zygote up)
	wg       sync.WaitGroup
}

// zygote is one started zygote.
type zygote struct {
	w     *warmRuntime
	j     *jail
	ctl   *os.File // the daemon's end of its control socket
	nsRef *os.File // a pidfd of its jail's pid 1: its runs' bootstraps join its user and pid namespaces
	ctlMu sync.Mutex
	info  ZygoteInfo
	forks atomic.Int64
	done  chan struct{} // closed when the zygote's jail has ended

	mu       sync.Mutex
	runs     int  // runs forked and not yet cleaned up
	retiring bool // no more forks; ends when runs is 0
	nsUsers  int  // runs' starts passing nsRef to their bootstraps now
	nsGone   bool // its jail was cleaned up: nsRef closes with its last user
}

// zygoteNS is z.nsRef as a closer of z's jail. The pidfd is passed by
// number to each run's bootstrap, so it must not close while a run's
// start is using it: its number could be another file's by then, and a
// bootstrap would join whatever namespaces that file is of. It closes
// when the jail is cleaned up and no start uses it, whichever is last.
type zygoteNS struct{ z *zygote }

func (n zygoteNS) Close() error { n.z.dropNS(); return nil }

// useNS holds nsRef open for a run's start (doneNS gives it back); false
// once the zygote's jail has been cleaned up.
func (z *zygote) useNS() bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.nsGone {
		return false
	}
	z.nsUsers++
	return true
}

func (z *zygote) doneNS() {
	z.mu.Lock()
	z.nsUsers--
	last := z.nsGone && z.nsUsers == 0
	z.mu.Unlock()
	if last {
		z.nsRef.Close()
	}
}

func (z *zygote) dropNS() {
	z.mu.Lock()
	last := !z.nsGone && z.nsUsers == 0
	z.nsGone = true
	z.mu.Unlock()
	if last {
		z.nsRef.Close()
	}
}

// KeepWarm keeps a zygote of s and s.Ahead runs forked from it ahead of
// requests, replacing the zygote when it dies or after s.MaxForks forks.
// It replaces a previous call's zygote of the same name, which serves on
// (the requests of either runtime) until the new one is up, and then ends
// once its runs have. Close ends them all. A request whose Spec.Start is
// StartWarm and whose runtime (Python, ReadOnlyMounts, Etc) is this one's
// runs warm; while no zygote is up it runs cold (WarmStats counts it).
func (r *Runner) KeepWarm(s ZygoteSpec) {
	if s.Python == "" {
		s.Python = DefaultPython
	}
	w := &warmRuntime{r: r, spec: s}
	w.spec.Limits = zygoteLimits(s.Limits, s.Ahead)
	// A run's /code holds the shared code but the entry, which only the
	// zygote loads (and which a request does not bring: it would not fit).
	shared := slices.DeleteFunc(slices.Clone(s.Code), func(f File) bool { return f.Path == s.Entry })
	w.base = jailBase{binds: binds(&Spec{ReadOnlyMounts: s.ReadOnlyMounts}), etc: s.Etc, shared: shared}
	tmp := s.RunLimits.withDefaults().TmpBytes
	// A run's init holds warmInitFilter; its program installs w.base's,
	// the Runner's (warmFlow.startProgram's programPlan).
	initBase := w.base
	initBase.filter = r.warmInitFilter()
	w.pool = &preparedPool{
		want:    s.Ahead,
		base:    w.base,
		limits:  s.RunLimits.withDefaults(),
		onError: func(err error) { w.event("fork failed", err) },
		build:   r.build(initBase, tmp),
		start:   w.startRun,
	}
	var retired []*warmRuntime // replaced, and not serving w's requests
	r.poolMu.Lock()
	if r.warm == nil {
		r.warm = map[string]*warmRuntime{}
	}
	if old := r.warm[s.Name]; old != nil {
		// w is set up before it is published: warmFor reads formerEtc
		// and serving reads prev. The runtime that serves until w is up:
		// old, or, if old never came up, the one old was waiting to
		// replace; but none whose runs are not w's (other mounts or
		// python): w's requests then run cold until it is up.
		old.mu.Lock()
		prev, up := old.prev, old.cur != nil
		old.prev = nil
		old.mu.Unlock()
		serving := old
		if prev != nil && !up {
			serving, prev = prev, old
		}
		if prev != nil {
			retired = append(retired, prev)
		}
		if slices.Equal(serving.base.binds, w.base.binds) && serving.spec.Python == w.spec.Python {
			w.prev = serving
			w.formerEtc = append([]*Etc{old.base.etc}, old.formerEtc[:min(len(old.formerEtc), maxFormerEtc-1)]...)
		} else {
			retired = append(retired, serving)
		}
	}
	r.warm[s.Name] = w
	r.poolMu.Unlock()
	for _, o := range retired {
		r.teardowns.Go(o.close)
	}
	w.startZygote()
}

// maxFormerEtc bounds warmRuntime.formerEtc.
const maxFormerEtc = 4

// serving is the runtime that serves w's requests now: w, or while w has
// no zygote up yet, the one it replaces.
func (w *warmRuntime) serving() *warmRuntime {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur == nil && w.prev != nil {
		return w.prev
	}
	return w
}

// WarmStats tells, over every environment's zygote: how many are up, how
// many runs wait forked ahead, how many zygotes were started after the
// first (restarts, retirements), and how many warm requests ran cold.
func (r *Runner) WarmStats() (up, ahead int, restarts, fallbacks int64) {
	r.poolMu.Lock()
	ws := slices.Collect(mapValues(r.warm))
	r.poolMu.Unlock()
	for _, w := range ws {
		sv := w.serving() // while a replacement starts, the one it replaces
		sv.mu.Lock()
		if sv.cur != nil {
			up++
		}
		sv.mu.Unlock()
		sv.pool.mu.Lock()
		ahead += len(sv.pool.ready)
		sv.pool.mu.Unlock()
		restarts += w.restarts.Load()
		fallbacks += w.fallback.Load()
	}
	return up, ahead, restarts, fallbacks
}

// WarmInfo is what the zygote serving environment name reported (ok false
// while none is up).
func (r *Runner) WarmInfo(name string) (ZygoteInfo, bool) {
	r.poolMu.Lock()
	w := r.warm[name]
	r.poolMu.Unlock()
	if w == nil {
		return ZygoteInfo{}, false
	}
	w = w.serving()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur == nil {
		return ZygoteInfo{}, false
	}
	return w.cur.info, true
}

func mapValues[K comparable, V any](m map[K]V) func(func(V) bool) {
	return func(yield func(V) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

func (w *warmRuntime) event(e string, err error) {
	if w.spec.OnEvent != nil {
		w.spec.OnEvent(e, err)
	}
	if l := w.r.Log; l != nil {
		if err != nil {
			l.Warn("zygote "+e, "environment", w.spec.Name, "err", err)
		} else {
			l.Info("zygote "+e, "environment", w.spec.Name)
		}
	}
}

// warmFor is the warm runtime whose runs fit these binds and /etc (or an
// /etc of a runtime it replaced).
func (r *Runner) warmFor(binds []string, etc *Etc) *warmRuntime {
	r.poolMu.Lock()
	defer r.poolMu.Unlock()
	for _, w := range r.warm {
		if (w.base.etc == etc || slices.Contains(w.formerEtc, etc)) && slices.Equal(w.base.binds, binds) {
			return w.serving()
		}
	}
	return nil
}

// current is the zygote to fork from, with a run counted on it (runEnded
// gives it back); nil when none is up.
func (w *warmRuntime) current() *zygote {
	w.mu.Lock()
	z := w.cur
	w.mu.Unlock()
	if z == nil || !z.take() {
		return nil
	}
	if max := w.spec.MaxForks; max > 0 && z.forks.Add(1) == int64(max) {
		w.retire(z)
	} else if max <= 0 {
		z.forks.Add(1)
	}
	return z
}

// take counts a run on z, unless it is retiring.
func (z *zygote) take() bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.retiring {
		return false
	}
	z.runs++
	return true
}

// isRetiring tells whether z forks no more runs.
func (z *zygote) isRetiring() bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.retiring
}

// runEnded gives a run back to its zygote; a retired zygote ends with its
// last run.
func (z *zygote) runEnded() {
	z.mu.Lock()
	z.runs--
	last := z.retiring && z.runs == 0
	z.mu.Unlock()
	if last {
		z.stop()
	}
}

// retire replaces z by a fresh zygote. z goes on serving until its
// replacement is up, so that runs do not start cold meanwhile (startZygote
// then ends it: endRetired); if none can start, z serves on, and the
// failures are logged.
func (w *warmRuntime) retire(z *zygote) {
	w.event("retired", nil)
	w.restarts.Add(1)
	w.startZygote()
}

// endRetired stops forking from z; it ends once its runs have.
func (z *zygote) endRetired() {
	z.mu.Lock()
	z.retiring = true
	idle := z.runs == 0
	z.mu.Unlock()
	if idle {
		z.stop()
	}
}

// stop closes the zygote's control socket: it exits, and its jail ends.
func (z *zygote) stop() {
	z.ctlMu.Lock()
	z.ctl.Close()
	z.ctlMu.Unlock()
}

func (w *warmRuntime) close() {
	w.mu.Lock()
	w.closed = true
	z, prev := w.cur, w.prev
	w.cur, w.prev = nil, nil
	w.mu.Unlock()
	if prev != nil {
		prev.close()
	}
	w.pool.close()
	if z != nil {
		z.endRetired()
	}
	w.wg.Wait()
}

// warmInitFilter is the filter of a warm run's init: only the calls of
// its adopting tail (seccomp.AdoptCalls, a subset of the default policy),
// or, for a Runner with a filter of its own, that one: the tail is
// checked against the default policy only.
func (r *Runner) warmInitFilter() []byte {
	if r.Seccomp != nil {
		return r.Seccomp
	}
	return seccomp.AdoptProgramBytes()
}

// startZygote starts a zygote on a goroutine of its own, which holds its
// OS thread locked for the zygote's whole life (its pid 1's parent-death
// signal is tied to that thread); the runs forked ahead are filled once it
// is up.
func (w *warmRuntime) startZygote() {
	w.mu.Lock()
	if w.starting || w.closed {
		w.mu.Unlock()
		return
	}
	w.starting = true
	w.mu.Unlock()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		z, err := w.launch()
		w.mu.Lock()
		w.starting = false
		closed := w.closed
		var retired *zygote       // the zygote this one replaces (retire)
		var replaced *warmRuntime // the runtime this one replaces (KeepWarm)
		if err == nil && !closed {
			retired, replaced = w.cur, w.prev
			w.cur, w.prev, w.backoff = z, nil, 0
		}
		w.mu.Unlock()
		if retired != nil {
			retired.endRetired()
			// Its runs made ahead go too: they would keep it (and its
			// address-space layout and hash seed) alive until requests
			// took them.
			// (Any run of a retiring zygote is dropped: this one's, or one
			// an earlier retire left, which no request may take either.)
			w.pool.drop(func(j *jail) bool { return j.guard.retiring() })
		}
		if replaced != nil {
			w.r.teardowns.Go(replaced.close)
		}
		if err != nil {
			w.event("failed", err)
			w.retryLater()
			return
		}
		if closed {
			z.stop()
		} else {
			w.event("started", nil)
			w.pool.fill(w.r)
		}
		<-z.done
		w.mu.Lock()
		dead := w.cur == z
		if dead {
			w.cur = nil
		}
		w.mu.Unlock()
		if dead { // not retired: it died
			w.event("died", errors.New("the zygote's jail ended"))
			w.restarts.Add(1)
			w.retryLater()
		}
	}()
}

// retryLater starts a zygote again after a back-off (1 s, doubling to a
// minute).
func (w *warmRuntime) retryLater() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.backoff = min(max(2*w.backoff, minRetry), maxRetry)
	d := w.backoff
	w.mu.Unlock()
	time.AfterFunc(d, w.startZygote)
}

// zygoteIDMap is a zygote's uid (and gid) map: its own uid as 1000 inside,
// and every other uid of the range [base, base+size) after 100000, so
// that its runs' namespaces can map theirs.
func zygoteIDMap(own, base, size uint32) string {
	m := fmt.Sprintf("%d %d 1\n", jailID, own)
	if own > base {
		m += fmt.Sprintf("%d %d %d\n", zygoteInside, base, own-base)
	}
	if end := base + size; own+1 < end {
		m += fmt.Sprintf("%d %d %d\n", zygoteUID(own+1, base), own+1, end-own-1)
	}
	return m
}

// zygoteInside is where a zygote's namespace maps the uid range: host uid
// base+i is zygoteInside+i there.
const zygoteInside = 100000

// logOutput logs what a zygote writes on stdout or stderr, line by line
// (it writes nothing unless something went wrong).
func logOutput(l *slog.Logger, name string, f *os.File) {
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l != nil {
			l.Warn("zygote output", "environment", name, "line", sc.Text())
		}
	}
}
