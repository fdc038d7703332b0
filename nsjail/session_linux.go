package nsjail

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"agentjail/cgroup"
	"agentjail/seccomp"
)

// Sessions. A session is one jail whose program lives across calls, as a
// notebook keeps its kernel: a session server (the daemon's
// harness/session.py) that runs each call's code in one interpreter. The
// jail is a run's in every respect (namespaces, cgroup, uid, filter; warm
// or cold), started once; its limits are the session's. What differs is
// the program's fd 3: a SOCK_SEQPACKET control socket instead of a report
// pipe, on which each call comes with its own stdio:
//
//	daemon                                  session program (fd 3)
//	  <-- {"t":"ready"} ---------------------- set up: its stdio is /dev/null
//	  -- {"t":"call","n":N} + fds: the
//	     call's payload, stdin (feeds, or
//	     /dev/null), stdout, stderr, report -->
//	                                           the payload's files, the fds on
//	                                           0-2, the code; the report to the
//	                                           report pipe; stdio back to /dev/null
//	  <-- {"t":"end","n":N,"status":S,...} --- S: the call's end as a wait
//	                                           status (0, 1<<8, SIGINT)
//
// Between calls nothing is read. A call reads one record, its end: what
// else the program sends ends the session (sessionrecords_linux.go).
// Every limit of a call is enforced from here: its wall time (from the
// send), its share of the group's CPU time, its output. Past one the call
// is interrupted (SIGINT to the jail's init, which forwards it to the
// program: a KeyboardInterrupt in the call), and if it has not ended
// InterruptGrace later the session is killed. The session's own limits
// end it: its memory (the OOM kill), its CPU budget, a forbidden call in
// kill mode. Nothing the program sends is trusted beyond what a program's
// exit status is: a record can end a call early or claim an exit code,
// never a kill reason or a figure, which come from this process's timers
// and the kernel.

// Session is a live jail that runs calls (Runner.StartSession). Its
// methods are safe for concurrent use; Call runs one call at a time.
type Session struct {
	ID      string
	Start   StartMode // how its interpreter started
	Created time.Time

	j          *jail
	ctl        *os.File // this process's end of the control socket
	release    func()   // gives back the jail's uid (and the thread that holds it), once it is cleaned up
	violations *seccomp.Collector
	stopSup    func(grace time.Duration)
	watchers   sync.WaitGroup
	stopWatch  chan struct{} // closed when the jail has ended: the session's watchers stop

	// calling is held by a call, and by the clean-up at the session's
	// end, which must not remove what a call still reads (the group,
	// /workspace).
	calling sync.Mutex
	seq     int // calls sent (calling held)

	mu     sync.Mutex
	reason EndReason          // why it ended; the first recorded wins
	exit   syscall.WaitStatus // how its program ended, once dead is closed
	peak   int64              // the highest peak read so far: the session's since its start (foldPeak)
	final  SessionStats       // once dead is closed
	cerr   error              // clean-up failure, once done is closed
	dead   chan struct{}      // closed when every process of the jail is gone
	done   chan struct{}      // closed when the jail is removed and its uid given back
}

// StartSession starts a session's jail: s's program, with s's limits for
// the whole session (CPUTime is its total CPU budget; WallTime and
// OutputBytes are per call, CallLimits), warm when s.Start asks and a
// zygote of s's runtime is up, else cold. Its program must speak the
// session protocol on fd 3 (above); StartSession returns once it said it
// is ready. The caller ends it with End, then Wait.
func (r *Runner) StartSession(ctx context.Context, s *Spec) (*Session, error) {
	spec, b, err := checkedSpec(s, NewSessionID)
	if err != nil {
		return nil, err
	}
	spec.Report = true // fd 3 is kept: the control socket
	code := codeFiles(&spec)
	// A prepared jail (or a warm run forked ahead) that died while it
	// waited ran nothing of the session: one more try, in a fresh jail.
	for fresh := false; ; fresh = true {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l, rest, err := r.leaseJail(&spec, b, code, fresh)
		if err != nil {
			return nil, err
		}
		sess, err := r.openSession(ctx, &spec, l, rest)
		if fresh || !errors.Is(err, errNotDelivered) {
			return sess, err
		}
	}
}

// startupOutputBytes is what a session's program may print before it is
// ready: kept for the error of a start that fails.
const startupOutputBytes = 16 << 10

// openSession gives the leased jail its program, with the control socket
// on fd 3, and waits for the program's readiness.
func (r *Runner) openSession(ctx context.Context, spec *Spec, l *lease, rest []File) (*Session, error) {
	j := l.j
	j.spec = spec
	s := &Session{ID: spec.ID, Start: l.start, Created: time.Now(), j: j, release: l.release,
		stopWatch: make(chan struct{}), peak: -1, dead: make(chan struct{}), done: make(chan struct{})}
	fail := func(err error) (*Session, error) {
		err = errors.Join(err, j.cleanup())
		l.release()
		return nil, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail(stageErr("socketpair", err))
	}
	if err := unix.SetNonblock(fds[0], true); err != nil { // pollable: its reads wait in the runtime's poller
		unix.Close(fds[0])
		unix.Close(fds[1])
		return fail(stageErr("socketpair", err))
	}
	s.ctl = os.NewFile(uintptr(fds[0]), "session-control")
	control := os.NewFile(uintptr(fds[1]), "session-control-child")
	j.closers = append(j.closers, s.ctl, control)
	cfg := requestConfigFor(spec, rest)
	cfg.Collect = true // the calls' collect: /workspace comes with msgSeccomp
	pio, err := j.deliver(cfg, control)
	if err != nil {
		return fail(err)
	}
	// Only the jail may hold the other end: its end is then the jail's.
	control.Close()
	listener, _, err := j.awaitExec()
	if err != nil {
		return fail(err)
	}
	s.violations, s.stopSup = j.superviseSeccomp(listener)
	startup := &capture{limit: startupOutputBytes, onLimit: func() {}}
	startup.start(0, pio.out)
	startup.start(1, pio.err)
	lim := spec.Limits
	s.watchers.Go(func() { j.watchCPU(0, lim.CPUTime, lim.CPUs, s.stopWatch, func() { j.kill(KillCPUTimeout) }) })
	j.watchMemory(&s.watchers, s.stopWatch)
	j.flow.watch(j, s.stopWatch)
	go s.life()

	err = s.awaitReady(ctx)
	s.idle() // until its first call (session_idle_linux.go)
	// Ready, the program has put /dev/null on its stdio: EOF now.
	startup.wait(100*time.Millisecond, pio.out, pio.err)
	if err != nil {
		s.End(EndExited)
		_ = s.Wait()
		if out := strings.TrimSpace(string(startup.buf[1]) + string(startup.buf[0])); out != "" {
			err = fmt.Errorf("%w; it wrote: %s", err, out)
		}
		return nil, &StageError{Stage: "session program", Msg: err.Error()}
	}
	return s, nil
}

// awaitReady waits for the program's first record, which must be "ready".
func (s *Session) awaitReady(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { _ = s.ctl.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	_ = s.ctl.SetReadDeadline(time.Now().Add(setupTimeout))
	defer s.ctl.SetReadDeadline(time.Time{})
	rec, _, err := s.readRecord()
	switch {
	case errors.Is(err, io.EOF):
		return errors.New("it ended before it was ready")
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return err
	case rec.T != "ready":
		return fmt.Errorf("its first record was %q, not ready", rec.T)
	}
	return nil
}

// life waits for the jail's end, however it comes, records how the
// program ended and why the session did, and, once no call reads the
// jail any more, removes it.
func (s *Session) life() {
	j := s.j
	werr := j.wait()
	close(s.stopWatch)
	s.watchers.Wait()
	ws, ok := j.programEnd()
	zfail := j.flow.failure(j, ok) != nil // before s.mu: it may wait for the zygote's end
	stats, serr := j.cg.Stats()
	s.mu.Lock()
	s.exit = ws
	s.final = SessionStats{PeakMemoryBytes: -1}
	if serr == nil {
		s.foldPeak(stats.PeakMemoryBytes)
		s.final = SessionStats{PeakMemoryBytes: s.peak, CPUTime: stats.CPUTime}
	}
	if zfail && s.reason == "" {
		s.reason = EndRuntime
	}
	if s.reason == "" {
		var res Result
		res.OOMKills = stats.OOMKills
		res.decide(ws, j.killReason())
		s.reason = EndExited
		if res.KillReason != KillNone {
			s.reason = EndReason(res.KillReason)
		}
	}
	close(s.dead)
	s.mu.Unlock()

	s.calling.Lock() // a call still running reads the group and /workspace
	defer s.calling.Unlock()
	s.stopSup(time.Second)
	err := j.cleanup()
	s.release()
	s.mu.Lock()
	s.cerr = errors.Join(werr, err)
	s.mu.Unlock()
	close(s.done)
}

// End ends the session for reason (the first reason recorded wins): its
// jail is killed, and Wait returns once it is removed. A call running
// then ends with a result (kill reason: killFor(reason)).
func (s *Session) End(reason EndReason) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.dead:
		return // and the jail may be cleaned up: nothing to kill
	default:
	}
	if s.reason == "" {
		s.reason = reason
	}
	_ = s.j.cg.SetIdle(false) // its processes die at once (session_idle_linux.go)
	s.j.kill(killFor(reason))
}

// Wait waits until the ended session's jail has been removed (End, or
// its own end); the error is a clean-up that failed (ErrCleanup: the
// next start-up sweep removes what is left).
func (s *Session) Wait() error {
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cerr != nil {
		return fmt.Errorf("%w: %v", ErrCleanup, s.cerr)
	}
	return nil
}

// Done is closed once the session has ended and its jail is removed.
func (s *Session) Done() <-chan struct{} { return s.done }

// Ended is why the session ended; "" while it lives.
func (s *Session) Ended() EndReason {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.dead:
		return s.reason
	default:
		return ""
	}
}

// HostUID is the host uid the session's jail runs as.
func (s *Session) HostUID() uint32 { return s.j.uid }

// Stats reads the session's figures now: its memory in use, its peak
// and CPU time since it started. They are the kernel's; a peak the
// kernel resets for each call (CallResult) is folded into the session's
// here, so that no reset loses it.
func (s *Session) Stats() SessionStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.dead:
		return s.final
	default:
	}
	out := SessionStats{MemoryBytes: -1, PeakMemoryBytes: -1}
	if st, err := s.j.cg.Stats(); err == nil {
		s.foldPeak(st.PeakMemoryBytes)
		out.PeakMemoryBytes, out.CPUTime = s.peak, st.CPUTime
	}
	if n, err := s.j.cg.MemoryBytes(); err == nil {
		out.MemoryBytes = n
	}
	return out
}

// foldPeak keeps the highest peak read (s.mu held). Every reading of the
// group's mark is folded in before the mark is reset, so the highest is
// the session's peak since its start.
func (s *Session) foldPeak(p int64) {
	if p >= 0 && p > s.peak {
		s.peak = p
	}
}

// outputTail is how long a call's output is awaited after the call's end
// record: its stdio is /dev/null again by then, and EOF comes at once,
// unless a process the call left running still holds the pipes. What
// that process writes later is lost.
const outputTail = 100 * time.Millisecond

// Call runs one call in the session and returns what it did. A call that
// fails, is interrupted or ends the session is a CallResult; the errors
// are ErrSessionBusy (another call runs), *SessionEndedError, a
// *FieldError for the call's limits or collect, or a *StageError when the
// call could not be given to the session. When ctx is cancelled the call
// is interrupted (KillCancelled), or, with the cause KillShutdown, the
// session is ended (EndShutdown).
func (s *Session) Call(ctx context.Context, c *CallSpec) (*CallResult, error) {
	// Ended first: the clean-up of an ended session holds calling too.
	if r := s.Ended(); r != "" {
		return nil, &SessionEndedError{Reason: r}
	}
	if !s.calling.TryLock() {
		return nil, ErrSessionBusy
	}
	defer s.calling.Unlock()
	if r := s.Ended(); r != "" {
		return nil, &SessionEndedError{Reason: r}
	}
	if err := c.Limits.Validate(); err != nil {
		return nil, err
	}
	if err := ValidateCollect(c.Collect); err != nil {
		return nil, err
	}
	s.seq++
	k := &call{s: s, n: s.seq}
	defer k.closeFiles()
	if err := k.open(c); err != nil {
		return nil, err
	}
	j := s.j
	before, err := j.cg.Stats()
	if err != nil {
		return nil, stageErr("read cgroup", err)
	}
	k.before, k.seccompBefore = before, s.violations.Report()
	s.mu.Lock()
	s.foldPeak(before.PeakMemoryBytes)
	s.mu.Unlock()
	// The call's own peak where the kernel can reset the mark (v1, v2 on
	// Linux 6.12+); else Stats says its peak is the group's since creation.
	k.peakKnown = j.cg.ResetPeak() == nil
	if err := s.wake(); err != nil {
		return nil, err
	}
	defer s.idle()
	k.sent = time.Now()
	if err := k.send(); err != nil {
		s.awaitDeath() // the program's end of the socket is gone
	}
	p := pipes{k.outR, k.errR, k.repR}
	l := watchLimits{outputBytes: c.Limits.OutputBytes, wall: c.Limits.WallTime, cpuBase: before.CPUTime, cpu: c.Limits.CPUTime, cpus: j.spec.Limits.CPUs}
	wd := j.watch(ctx, l, p, k.stop)
	end, endRaw := s.awaitEnd(k.n)
	k.ended = time.Now()
	k.over() // no interrupt may follow: the watchdog's stops come to nothing
	wd.halt()
	if end == nil {
		s.awaitDeath() // no end record: the session ended during the call
		if err := j.flow.failed(); err != nil {
			return nil, err
		}
	}
	tail := outputTail
	if s.Ended() != "" {
		tail = time.Second // every process is gone: EOF comes at once
	}
	wd.drain(tail, p)
	res, err := s.callResult(k, c, wd, end)
	if err != nil {
		return nil, err
	}
	return &CallResult{Result: res, End: endRaw, Ended: s.Ended()}, nil
}

// callResult is the result of the call k of c, once it has ended (end:
// its end record; nil when the session ended during the call) and its
// output is in: the group's figures since the call's start, its files,
// and how it ended. The group and /workspace are there until the call
// returns: the session's clean-up waits for it.
func (s *Session) callResult(k *call, c *CallSpec, wd *watchdog, end *sessionRecord) (*Result, error) {
	j := s.j
	after, err := j.cg.Stats()
	if err != nil {
		return nil, stageErr("read cgroup", err)
	}
	s.mu.Lock()
	s.foldPeak(after.PeakMemoryBytes)
	s.mu.Unlock()
	res := j.newResult(cmp.Or(c.ID, NewID()), wd.out, wd.report, k.ended.Sub(k.sent), k.figures(after), nil)
	res.Seccomp = s.violations.Report().Since(k.seccompBefore)
	res.Start = s.Start
	if s.Start == StartWarm {
		markWarm(res) // its peak does not count the zygote's pages it only reads, as a warm run's
	}
	if len(c.Collect) > 0 && j.workspace != nil {
		// The session's processes may still write: Collect opens
		// nothing it has not checked at the moment of the open, and
		// reads at most the limit through the fd it checked.
		res.Files = Collect(j.workspace, c.Collect, c.CollectLimits)
	}
	if end != nil {
		res.decide(end.waitStatus(), KillNone)
		if r := k.reason(); r != KillNone {
			// Its interrupt came before the end: killed for it, by SIGINT or,
			// when the code caught it and went on, with no signal (§6.3).
			res.Status, res.KillReason = StatusKilled, r
		}
	} else {
		s.mu.Lock()
		ws := s.exit
		s.mu.Unlock()
		res.decide(ws, j.killReason())
	}
	return res, nil
}

// figures are the call's share of the group's figures, after being
// the group's at its end.
func (k *call) figures(after cgroup.Stats) cgroup.Stats {
	f := cgroup.Stats{
		PeakMemoryBytes: after.PeakMemoryBytes, PeakMemorySource: after.PeakMemorySource,
		CPUTime:     after.CPUTime - k.before.CPUTime,
		OOMKills:    after.OOMKills - k.before.OOMKills,
		PidsPeak:    -1,
		PidsMaxHits: after.PidsMaxHits - k.before.PidsMaxHits,
	}
	if !k.peakKnown {
		f.PeakMemoryBytes, f.PeakMemorySource = -1, ""
	}
	return f
}

// call is one call in flight: its files, its interrupt.
type call struct {
	s *Session
	n int

	before        cgroup.Stats    // the group's at the call's start
	seccompBefore *seccomp.Report // the session's forbidden calls then
	peakKnown     bool            // the group's peak mark was reset for the call
	sent, ended   time.Time       // the call's send, and its end

	payload, stdin   *childFD // what the program gets: sent, then closed here
	feeds            []*feed  // of the payload and stdin (feed_linux.go), stopped at the call's end
	outW, errW, repW *childFD
	outR, errR, repR *os.File // this process's ends of the call's pipes

	mu       sync.Mutex
	why      KillReason  // the first limit the call passed
	grace    *time.Timer // the session's end, if the call does not stop in time
	finished bool
}

// open makes the call's files: its payload and stdin (feeds, or
// /dev/null), its stdout and stderr pipes (the jail's uid owns their
// write ends, as a run's), its report pipe.
func (k *call) open(c *CallSpec) error {
	var err error
	if k.payload, err = feedFD(c.Payload, &k.feeds); err != nil {
		return stageErr("call payload", err)
	}
	if k.stdin, err = feedFD(c.Stdin, &k.feeds); err != nil {
		return stageErr("stdin", err)
	}
	for _, p := range []struct {
		r **os.File
		w **childFD
	}{{&k.outR, &k.outW}, {&k.errR, &k.errW}, {&k.repR, &k.repW}} {
		if *p.r, *p.w, err = childPipe(); err != nil {
			return stageErr("call pipes", err)
		}
	}
	for _, w := range []*childFD{k.outW, k.errW} {
		if err := unix.Fchown(w.fd, int(k.s.j.uid), int(k.s.j.uid)); err != nil {
			return stageErr("chown stdio pipe", err)
		}
	}
	return nil
}

// send gives the call to the program, then closes this process's copies
// of what the program now holds: the ends of its output are then the
// program's alone.
func (k *call) send() error {
	hdr := fmt.Appendf(nil, `{"t":"call","n":%d}`, k.n)
	fds := []int{k.payload.fd, k.stdin.fd, k.outW.fd, k.errW.fd, k.repW.fd}
	rc, err := k.s.ctl.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Write(func(fd uintptr) bool {
		serr = unix.Sendmsg(int(fd), hdr, unix.UnixRights(fds...), nil, unix.MSG_NOSIGNAL)
		return serr != unix.EAGAIN
	}); err != nil {
		serr = err
	}
	for _, f := range []*childFD{k.payload, k.stdin, k.outW, k.errW, k.repW} {
		f.Close()
	}
	return serr
}

func (k *call) closeFiles() {
	for _, f := range k.feeds {
		f.stop()
	}
	for _, f := range []*childFD{k.payload, k.stdin, k.outW, k.errW, k.repW} {
		f.Close() // nil, or sent and closed already: nothing
	}
	for _, f := range []*os.File{k.outR, k.errR, k.repR} {
		if f != nil {
			f.Close()
		}
	}
}

// interrupt records why the call must stop (the first reason wins) and
// sends the jail's init SIGINT, which it forwards to the program: a
// KeyboardInterrupt in the call. If the call has not ended
// InterruptGrace later, the session ends for that reason.
func (k *call) interrupt(why KillReason) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.why != KillNone || k.finished {
		return
	}
	k.why = why
	k.grace = time.AfterFunc(InterruptGrace, func() { k.s.End(EndReason(why)) })
	// Under k.mu: the call's end (over) waits for it, so the jail is not
	// cleaned up, its init's handle released, while it is signalled.
	_ = k.s.j.proc.Signal(syscall.SIGINT)
}

// stop stops the call for why (the watchdog's): an interrupt; the
// caller's shutdown ends the session instead (EndShutdown).
func (k *call) stop(why KillReason) {
	if why == KillShutdown {
		k.s.End(EndShutdown)
		return
	}
	k.interrupt(why)
}

// over: the call has ended; no interrupt may follow, and none escalates.
func (k *call) over() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.finished = true
	if k.grace != nil {
		k.grace.Stop()
	}
}

func (k *call) reason() KillReason {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.why
}

// awaitDeath waits for the jail's end once the program's end of the
// control socket is gone: its death closes it, and the jail follows at
// once (its init exits with the program). A program that closed its fd 3
// and lives on can take no call: it is ended here.
func (s *Session) awaitDeath() {
	select {
	case <-s.dead:
	case <-time.After(InterruptGrace):
		s.End(EndControlLost)
		<-s.dead
	}
}
