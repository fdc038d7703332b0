package nsjail

import (
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

// The life of a session, top to bottom, on a jail of either flow (cold or
// warm), as a run's is its flow's run:
//
//	StartSession  the spec checked; a jail leased (session_lease_linux.go)
//	newSession    the session on it
//	open          controlSocket; the flow's startProgram, with the
//	              control socket on fd 3; superviseProgram: the exec, the
//	              seccomp supervisor; watch: the CPU budget, and what ends
//	              any jail (jail.watchJail); life on its own goroutine;
//	              awaitReady
//	Call          one call at a time, bounded by the one watchdog
//	              (session_call_linux.go)
//	End           the jail killed; life records why, then cleans up
//
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
		sess, err := newSession(&spec, l).open(ctx, rest)
		if fresh || !errors.Is(err, errNotDelivered) {
			return sess, err
		}
	}
}

// startupOutputBytes is what a session's program may print before it is
// ready: kept for the error of a start that fails.
const startupOutputBytes = 16 << 10

// newSession is the session of spec on the leased jail, not opened yet.
func newSession(spec *Spec, l *lease) *Session {
	l.j.spec = spec
	return &Session{ID: spec.ID, Start: l.start, Created: time.Now(), j: l.j, release: l.release,
		stopWatch: make(chan struct{}), peak: -1, dead: make(chan struct{}), done: make(chan struct{})}
}

// open gives the session's jail its program, with the control socket on
// fd 3 and the files of code rest, and waits for the program's
// readiness. From the exec on, the session's watchers run (watch) and its
// life waits for the jail's end (life).
func (s *Session) open(ctx context.Context, rest []File) (*Session, error) {
	j := s.j
	fail := func(err error) (*Session, error) {
		err = errors.Join(err, j.cleanup())
		s.release()
		return nil, err
	}
	control, err := s.controlSocket()
	if err != nil {
		return fail(err)
	}
	cfg := requestConfigFor(j.spec, rest)
	cfg.Collect = true // the calls' collect: /workspace comes with msgSeccomp
	pio, listener, err := j.flow.startProgram(j, cfg, control)
	if err != nil {
		return fail(err)
	}
	// Only the jail may hold the other end: its end is then the jail's.
	control.Close()
	s.violations, s.stopSup, _, err = j.superviseProgram(listener)
	if err != nil {
		return fail(err)
	}
	startup := &capture{limit: startupOutputBytes, onLimit: func() {}}
	startup.start(0, pio.out)
	startup.start(1, pio.err)
	s.watch()
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

// controlSocket makes the session's control socket: this process's end
// in s.ctl, the program's (its fd 3) returned; both are the jail's to
// close.
func (s *Session) controlSocket() (*os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, stageErr("socketpair", err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil { // pollable: its reads wait in the runtime's poller
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, stageErr("socketpair", err)
	}
	s.ctl = os.NewFile(uintptr(fds[0]), "session-control")
	control := os.NewFile(uintptr(fds[1]), "session-control-child")
	s.j.closers = append(s.j.closers, s.ctl, control)
	return control, nil
}

// watch starts the watchers of the session's own limits, until its jail
// has ended (stopWatch): its CPU budget, which ends it (a call's share of
// it is the call's watchdog's), and what ends any jail (jail.watchJail: its
// memory, a warm session's zygote).
func (s *Session) watch() {
	j, lim := s.j, s.j.spec.Limits
	s.watchers.Go(func() { j.watchCPU(0, lim.CPUTime, lim.CPUs, s.stopWatch, func() { j.kill(KillCPUTimeout) }) })
	j.watchJail(&s.watchers, s.stopWatch)
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
	zfail := j.guard.failure(j, ok) != nil // before s.mu: it may wait for the zygote's end
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
