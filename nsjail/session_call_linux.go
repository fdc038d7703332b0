package nsjail

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"agentjail/cgroup"
	"agentjail/seccomp"
)

// A session's call, top to bottom (the protocol is drawn in
// session_linux.go): Call checks the call and opens its files (call.open),
// sends it on the control socket (call.send), and bounds it with the one
// watchdog (watchdog_linux.go), whose stops interrupt the call
// (call.stop); it waits for the call's end record (awaitEnd,
// sessionrecords_linux.go), then reads its result (callResult) from the
// group's figures and the output.

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
		if err := j.guard.failed(); err != nil {
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
