package nsjail

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The parent's side of protocol.go's conversation: sending a message,
// reading the init stage's answers, and making sense of an init stage
// that ended instead of answering.

// send writes one message to the init stage, with fds (SCM_RIGHTS) if any.
func (j *jail) send(typ msgType, payload []byte, fds []int) error {
	j.trace("->", typ, len(payload), len(fds))
	return sendOn(j.sync, typ, payload, fds)
}

// sendOn writes one message to f, with fds (SCM_RIGHTS) if any.
func sendOn(f *os.File, typ msgType, payload []byte, fds []int) error {
	if len(fds) > 0 {
		return sendMsgFds(f, typ, payload, fds)
	}
	return writeMsg(f, typ, payload)
}

// receive reads the next message on jail.peer: the init stage's; in a
// warm run, once its program has its go, the program's (and then its
// zygote's msgExit).
func (j *jail) receive() (typ msgType, payload []byte, fds []int, err error) {
	typ, payload, fds, err = readMsgFds(j.peer)
	if err == nil {
		j.trace("<-", typ, len(payload), len(fds))
	} else if j.runner.Log != nil {
		j.runner.Log.Debug("jail handshake", "id", j.specID(), "end", err.Error())
	}
	return typ, payload, fds, err
}

// trace logs one message of the handshake at debug level.
func (j *jail) trace(dir string, typ msgType, n, fds int) {
	if l := j.runner.Log; l != nil && l.Enabled(context.Background(), slog.LevelDebug) {
		l.Debug("jail handshake", "id", j.specID(), "dir", dir, "msg", typ.String(), "bytes", n, "fds", fds)
	}
}

func (j *jail) specID() string {
	if j.spec == nil {
		return "(prepared)"
	}
	return j.spec.ID
}

// expect reads the next message from the init stage, which must be want.
// A msgError becomes the stage error it carries; an init stage that ended
// without an answer is an *initEndedError.
func (j *jail) expect(want msgType) error {
	_, err := j.expectFds(want, 0)
	return err
}

// expectFds is expect for a message that carries n fds, which it returns.
func (j *jail) expectFds(want msgType, n int) ([]int, error) {
	typ, payload, fds, err := j.receive()
	if err != nil {
		closeFds(fds)
		return nil, &initEndedError{err: j.initFailure("wait for init stage", err), timedOut: errors.Is(err, os.ErrDeadlineExceeded)}
	}
	if typ == msgError {
		closeFds(fds)
		return nil, decodeRecord(payload)
	}
	if typ != want || len(fds) != n {
		closeFds(fds)
		return nil, &StageError{Stage: "init", Msg: fmt.Sprintf("expected %v with %d fds, got %v with %d", want, n, typ, len(fds))}
	}
	return fds, nil
}

// initEndedError is an init stage that ended (or broke the socket)
// instead of answering, or that did not answer in time (timedOut: it may
// have been about to); it reads as the error it wraps.
type initEndedError struct {
	err      error
	timedOut bool
}

func (e *initEndedError) Error() string { return e.err.Error() }
func (e *initEndedError) Unwrap() error { return e.err }

// awaitSeccomp waits for the program's msgSeccomp, which says it has its
// filter, and carries the filter's listener (returned) and, when files
// are to be collected, the /workspace fd (j.workspace).
//
// Security: both fds are trusted because only agentjail's own code can
// send them. A cold jail's come on the sync socket, which is close-on-exec
// in the program, and the jail's init that holds it runs no code of the
// program. A warm run's come on the program's own socket
// (warmFlow.prog), on which zygote_program.py sends msgSeccomp and
// msgExec before it runs any code of the request, and which it closes
// (close_range) before that code runs.
func (j *jail) awaitSeccomp() (listener int, err error) {
	typ, payload, fds, err := j.receive()
	want := 1
	if j.collect {
		want = 2
	}
	switch {
	case err == nil && typ == msgSeccomp && len(fds) == want:
	case errors.Is(err, io.EOF):
		err = &StageError{Stage: "seccomp", Msg: "the init stage ended without sending the filter's listener"}
	case err != nil:
		err = j.initFailure("wait for exec", err)
	case typ == msgError:
		err = decodeRecord(payload)
	default:
		err = &StageError{Stage: "init", Msg: fmt.Sprintf("unexpected %v of %d bytes with %d fds", typ, len(payload), len(fds))}
	}
	if err != nil {
		closeFds(fds)
		return -1, err
	}
	if want == 2 {
		j.workspace = os.NewFile(uintptr(fds[1]), "workspace")
		j.closers = append(j.closers, j.workspace)
	}
	return fds[0], nil
}

// awaitExec waits, once the program has its filter (awaitSeccomp), for
// msgExec, with the time of the exec, which it returns as a time of this
// process's clocks. An init stage that ends after msgSeccomp without
// msgExec was killed as the program started (a limit, a cancel): its run
// goes on, timed from now. On an error it closes listener.
//
// Security: the time is trusted because only agentjail's own code can
// send it (awaitSeccomp).
func (j *jail) awaitExec(listener int) (start time.Time, err error) {
	if beforeExecHook != nil {
		beforeExecHook()
	}
	typ, payload, fds, err := j.receive()
	switch {
	case len(fds) > 0:
		err = &StageError{Stage: "init", Msg: fmt.Sprintf("unexpected %d fds with %v", len(fds), typ)}
	case errors.Is(err, io.EOF):
		return time.Now(), nil
	case err != nil:
		err = j.initFailure("wait for exec", err)
	case typ == msgError:
		err = decodeRecord(payload)
	case typ == msgExec && len(payload) == 8:
		return monotonicTime(int64(binary.NativeEndian.Uint64(payload))), nil
	default:
		err = &StageError{Stage: "init", Msg: fmt.Sprintf("unexpected %v of %d bytes", typ, len(payload))}
	}
	closeFds(fds)
	unix.Close(listener)
	return time.Time{}, err
}

// monotonicTime is the time.Time of a CLOCK_MONOTONIC reading ns, taken in
// the jail (the same clock: a jail has no time namespace). A reading from
// the future, or from before the jail could have started, is no reading:
// it is taken as now, and at most setupTimeout ago.
func monotonicTime(ns int64) time.Time {
	now := time.Now()
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return now
	}
	ago := time.Duration(ts.Nano() - ns)
	return now.Add(-min(max(ago, 0), setupTimeout))
}

// programStatus reads msgExit after the jail's pid 1 has ended: the
// program's own wait status, which pid 1 sends before it exits when the
// program ends by itself. ok is false when pid 1 ended without it (the
// jail was killed as a whole).
func (j *jail) programStatus() (ws syscall.WaitStatus, ok bool) {
	// pid 1 is gone, and nothing else holds its end: EOF comes at once
	// after what it wrote. A warm run's program's end comes from its
	// parent, the zygote, which reaps it before pid 1 can end: the kernel
	// holds the end of a pid namespace's init (and its pidfd's, which
	// wait watches) until every other pid of the namespace is freed, the
	// program's included, which only its parent's reap frees. So a warm
	// run ends, killed or not, once its zygote has reaped its program,
	// which the zygote's loop does as soon as SIGCHLD wakes it.
	_ = j.peer.SetDeadline(time.Now().Add(time.Second))
	typ, payload, fds, err := j.receive()
	closeFds(fds)
	if err != nil || typ != msgExit || len(payload) != 4 {
		return 0, false
	}
	return syscall.WaitStatus(binary.NativeEndian.Uint32(payload)), true
}

func closeFds(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// initFailure explains a broken conversation with the init stage, with
// its exit status when it died.
func (j *jail) initFailure(stage string, err error) error {
	if j.proc == nil {
		return stageErr(stage, err)
	}
	_ = j.proc.Kill()
	if werr := j.wait(); werr != nil {
		return &StageError{Stage: stage, Msg: fmt.Sprintf("%v (init stage: %v)", err, werr)}
	}
	if st := j.initState(); st != nil && !st.Success() {
		return &StageError{Stage: stage, Msg: fmt.Sprintf("%v (init stage: %v)", err, st)}
	}
	return stageErr(stage, err)
}

// wait waits for the jail's pid 1 once, recording its end (pid1.wait).
func (j *jail) wait() error {
	err := j.pid1.wait()
	if err == nil {
		j.waited = true
	}
	return err
}

// awaitExit parks the calling goroutine in the runtime's poller until
// process pid (a child not yet waited for, so the pid names it) has ended,
// so that the Wait after it returns at once. A Wait alone blocks its
// thread in waitid for the whole run: the runtime's sysmon then takes the
// thread's P away and goes back to waking every 20 µs, dozens of sleeps
// and thread hand-offs of the daemon's CPU per run (BENCHMARKS.md). A
// pidfd becomes readable when its process ends; for a jail's pid 1, once
// every other process of the jail has ended too. Any failure here only
// leaves the work to Wait.
func awaitExit(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	awaitPidfd(f)
}

// awaitPidfd parks the calling goroutine in the runtime's poller until
// the process of the pidfd f (non-blocking) has ended.
func awaitPidfd(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	// Each call asks the kernel (poll, no wait): the poller forgets a
	// readiness that came between the registration and the read (it
	// resets its state first), so assuming "not yet" once can wait for ever.
	_ = rc.Read(func(fd uintptr) bool {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(p, 0)
			if err == unix.EINTR {
				continue // a signal (the runtime's preemption), not an end
			}
			return err != nil || n > 0
		}
	})
}

// awaitExitFor is awaitExit on this thread, for at most timeout: whether
// pid ended (or was gone already) in time. For a rare wait beside
// awaitExit's (supervise's kill mode).
func awaitExitFor(pid int, timeout time.Duration) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return err == unix.ESRCH // reaped already
	}
	defer unix.Close(fd)
	return pollPidfd(fd, timeout)
}

// pollPidfd waits at most timeout, on this thread, for the process of
// pidfd fd to end.
func pollPidfd(fd int, timeout time.Duration) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for deadline := time.Now().Add(timeout); ; {
		n, err := unix.Poll(p, int(max(time.Until(deadline), 0)/time.Millisecond))
		if err == unix.EINTR && time.Now().Before(deadline) {
			continue
		}
		return err == nil && n > 0
	}
}
