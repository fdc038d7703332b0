package nsjail

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// A warm run, from the daemon's side, top to bottom (the conversation is
// drawn in zygote_linux.go): runWarm (run_linux.go) takes a run forked
// ahead, or starts one (startRun: the bootstrap joins the zygote's user
// and pid namespaces, bootstrapArgs and bootstrap below); its build's msgReady
// brings the jail's namespaces (gotNS); the zygote forks the program into
// them (forkProgram, ahead for a run of the pool: prepareAhead); the
// request goes to the init (requestPlan: files only) and to the program
// (afterRequest: stdio, rlimits, the filter); the program joins the
// group and starts (afterGo: goProgram); from its msgSeccomp on, the
// run's messages are the program's (peer), and its init adopts it
// (execStarted: msgAdopt). Pid 1 is held by a pidfd (wait); the zygote's
// failure is watched (watch, zygote_watch_linux.go).

// warmFlow is a warm run's flow (jailFlow).
type warmFlow struct {
	z *zygote // the run's zygote, until release
	// ns are the init's pid, user, network, IPC and UTS namespaces (with
	// the jail's mntns, the ones the fork joins), sent with its build's
	// msgReady, until the fork has them.
	ns []int
	// prog is this process's end of the program's socket, on which the
	// program's messages (msgSeccomp, msgExec) and the zygote's msgExit
	// come.
	prog    *os.File
	progPid int      // the program's pid, in this process's pid namespace
	progFD  *os.File // a pidfd of the program
	live    bool     // the program has its go: the run's messages are its
	// pid 1 is not this process's child (bootstrapNested): it is held by
	// a pidfd, its end seen on it (ended), and never waited for (its
	// zygote's jail's init reaps it).
	pidfd *os.File
	ended bool
	zw    zygoteWatch // its zygote's failure (zygote_watch_linux.go)
}

// startRun starts j (whose uid is acquired) as a run of the current
// zygote: a jail whose user and pid namespaces are made inside the
// zygote's (a warmFlow), built with b; awaitBuild follows. The caller's
// OS thread must be locked until it returns (its bootstrap's parent-death
// signal), not longer (jail.threadBound).
func (w *warmRuntime) startRun(j *jail, b built) error {
	z := w.current()
	if z == nil {
		return errNoZygote
	}
	j.flow = &warmFlow{z: z}
	if !z.useNS() { // its jail is gone: it died
		return errNoZygote
	}
	err := j.start(b)
	z.doneNS()
	if err != nil && zygoteEnded(z) {
		// The zygote died while this run joined it (its pid namespace
		// gone, the pidfd's process reaped): the run is not its to fail,
		// it goes cold, as if none had been up.
		return errNoZygote
	}
	return err
}

var errNoZygote = errors.New("no zygote is up")

// zygoteEnded tells whether z's jail has ended, or ends within 100 ms:
// a run's start that failed may have seen the death before the runtime
// did. Only a failed start waits.
func zygoteEnded(z *zygote) bool {
	select {
	case <-z.done:
		return true
	case <-time.After(100 * time.Millisecond):
		return false
	}
}

// nestedNS is how many namespaces a warm run's init sends after its
// mount namespace (warmFlow.ns): pid, user, network, IPC and UTS.
const nestedNS = 5

// zygoteUID is the name of host uid uid in a zygote's user namespace
// (zygoteIDMap), base the first uid of the range.
func zygoteUID(uid, base uint32) uint32 { return zygoteInside + uid - base }

// bootstrapArgs: the init reports its pid with its credentials
// (bootstrapNested), and the bootstrap joins the zygote's namespaces
// through fd nestFd.
func (f *warmFlow) bootstrapArgs(j *jail, syncFd int, null *os.File, env []string, extra []*os.File) ([]string, []*os.File, error) {
	if err := unix.SetsockoptInt(syncFd, unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		return nil, nil, stageErr("socketpair", err)
	}
	if len(extra) == execFd-3 {
		extra = append(extra, null)
	}
	env = append(env, nestEnv+"="+strconv.FormatUint(uint64(zygoteUID(j.uid, j.runner.UIDs.Base)), 10))
	return env, append(extra, f.z.nsRef), nil
}

func (f *warmFlow) bootstrap(j *jail, boot *os.Process) (*os.Process, error) {
	proc, pidfd, err := bootstrapNested(j.sync, boot)
	f.pidfd = pidfd
	return proc, err
}

// threadBound: its bootstrap, the only process of the run with a
// parent-death signal, has been waited for by start (bootstrapNested),
// and its pid 1 is an orphan in its zygote's pid namespace, which dies
// with the zygote's jail (bootstrap_linux.c).
func (f *warmFlow) threadBound() bool { return false }
func (f *warmFlow) nsFds() int        { return nestedNS }

// gotNS: taken for the jail's namespaces unchecked: only the init stage
// can send them, before any of the request's code has run.
func (f *warmFlow) gotNS(fds []int) { f.ns = fds }

// prepareAhead: a warm run's program is forked ahead too: the request
// finds it in the jail's namespaces, waiting for its part.
func (f *warmFlow) prepareAhead(j *jail) error { return f.forkProgram(j) }

// requestPlan: the init gets the files; the program's part goes to the
// program (afterRequest), which is forked now if it was not ahead.
func (f *warmFlow) requestPlan(j *jail, cfg *requestConfig, _ []int) ([]byte, []int, error) {
	if f.prog == nil {
		if err := f.forkProgram(j); err != nil {
			return nil, nil, err
		}
	}
	return adoptPlan(cfg, j.tmpBytes), nil, nil
}

// afterRequest: the program takes its part (stdio, rlimits, the filter)
// while the init writes the files. One that ended while it waited ran
// nothing of the request.
func (f *warmFlow) afterRequest(j *jail, cfg *requestConfig, stdio []int) error {
	if f.progEnded() {
		return fmt.Errorf("%w: %w", errNotDelivered, &StageError{Stage: "send the program its request", Msg: "the program forked ahead has ended"})
	}
	if err := f.sendProg(j, msgRequest, programPlan(cfg, f.z.w.base.seccomp(j.runner)), stdio); err != nil {
		return fmt.Errorf("%w: %w", errNotDelivered, stageErr("send the program its request", err))
	}
	return nil
}

func (f *warmFlow) afterGo(j *jail, join []int) error { return f.goProgram(j, join) }

// peer: the init stage's socket, or the program's once it has its go.
func (f *warmFlow) peer(j *jail) *os.File {
	if f.live {
		return f.prog
	}
	return j.sync
}

// execStarted: the program exists (it sent msgSeccomp): its init watches
// it from now on, and ends the jail when it ends, on this pidfd of it. An
// init gone already was killed: the wait sees it.
func (f *warmFlow) execStarted(j *jail) {
	if f.live {
		_ = j.send(msgAdopt, nil, []int{int(f.progFD.Fd())})
	}
}

// wait: pid 1's end is seen on its pidfd; its status is not known (the
// program's comes with msgExit).
func (f *warmFlow) wait(*jail) error {
	if f.ended {
		return nil
	}
	awaitPidfd(f.pidfd)
	f.ended = true
	return nil
}

// initState: pid 1 ends as its program does, and is never waited for: its
// own end says nothing (the program's status comes with msgExit).
func (f *warmFlow) initState() *os.ProcessState { return nil }

// retiring: the run's zygote forks no more runs; nil once released.
func (f *warmFlow) retiring() bool { return f.z != nil && f.z.isRetiring() }

func (f *warmFlow) awaitKilled(_ *jail, timeout time.Duration) {
	pollPidfd(int(f.pidfd.Fd()), timeout)
}

// release: the namespaces not handed to a fork; pid 1's handle, released
// here, not at the garbage collector's will (it is never waited for,
// which would release it); the run given back to its zygote.
func (f *warmFlow) release(j *jail) {
	closeFds(f.ns)
	f.ns = nil
	if f.pidfd != nil {
		if j.proc != nil {
			_ = j.proc.Release()
			j.proc = nil
		}
		f.pidfd.Close()
		f.pidfd = nil
	}
	if f.z != nil {
		f.z.runEnded()
		f.z = nil
	}
}

// forkProgram has the zygote fork the warm run's program into the jail,
// once the jail is built (ahead of the request, for a run of the pool):
// the program's socket and the jail's namespaces go to the zygote with
// zFork; the fork becomes the run's uid, joins the namespaces, and says
// so with msgReady, whose credentials give its pid. It then waits for its
// request (sendProg) and its go (goProgram). Its messages come on f.prog.
func (f *warmFlow) forkProgram(j *jail) error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return stageErr("socketpair", err)
	}
	child := &childFD{fds[1]}
	defer child.Close()
	// The program's messages come with their sender's credentials: its
	// pid in this process's pid namespace (v2 moves it by that pid).
	if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		unix.Close(fds[0])
		return stageErr("socketpair", err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		return stageErr("socketpair", err)
	}
	f.prog = os.NewFile(uintptr(fds[0]), "program")
	j.closers = append(j.closers, f.prog)
	payload := binary.LittleEndian.AppendUint32(nil, zygoteUID(j.uid, j.runner.UIDs.Base))
	sent := append([]int{child.fd, int(j.mntns.Fd())}, f.ns...)
	f.z.ctlMu.Lock()
	err = sendMsgFds(f.z.ctl, zFork, payload, sent)
	f.z.ctlMu.Unlock()
	if err != nil {
		// The zygote is gone (the jail with it): nothing of the program ran.
		return fmt.Errorf("%w: %w", errNotDelivered, stageErr("send fork to the zygote", err))
	}
	child.Close()
	// The namespaces are the program's now; this process keeps the mount
	// namespace only (jail.mntns), to release the file system on another
	// thread after the answer, as for a cold jail.
	closeFds(f.ns)
	f.ns = nil
	return f.awaitFork(j)
}

// awaitFork reads the fork's msgReady, whose credentials give its pid,
// and takes a handle on it.
func (f *warmFlow) awaitFork(j *jail) error {
	_ = f.prog.SetDeadline(time.Now().Add(setupTimeout))
	typ, payload, got, pid, err := readMsgCreds(f.prog)
	closeFds(got)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w", errNotDelivered, stageErr("wait for the program's fork", err))
	case typ == msgError:
		return decodeRecord(payload)
	case typ != msgReady || pid <= 0:
		return &StageError{Stage: "fork", Msg: fmt.Sprintf("the program sent %v instead of its readiness", typ)}
	}
	// A handle on it, taken while it waits (it is alive): its end before
	// its request is seen (progEnded), and its pid never names another
	// process.
	fd, err := unix.PidfdOpen(int(pid), unix.PIDFD_NONBLOCK)
	if err != nil {
		return fmt.Errorf("%w: %w", errNotDelivered, stageErr("pidfd of the program", err))
	}
	f.progFD = os.NewFile(uintptr(fd), "program-pidfd")
	j.closers = append(j.closers, f.progFD)
	f.progPid = int(pid)
	return nil
}

// progEnded tells whether the warm run's program, forked ahead, has
// ended: then nothing of the request may go to it, and its pid may name
// another process.
func (f *warmFlow) progEnded() bool {
	p := []unix.PollFd{{Fd: int32(f.progFD.Fd()), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(p, 0)
		if err != unix.EINTR {
			return err != nil || n > 0
		}
	}
}

// sendProg sends the warm run's program one message (its request, its go).
func (f *warmFlow) sendProg(j *jail, typ msgType, payload []byte, fds []int) error {
	j.trace("-> program", typ, len(payload), len(fds))
	_ = f.prog.SetDeadline(time.Now().Add(setupTimeout))
	return sendOn(f.prog, typ, payload, fds)
}

// goProgram lets the warm run's program start, once its init has the
// request's files: it joins the run's group with the init's tasks files
// join (v1), or is moved there by its pid (v2). Its messages are the
// run's from then on (peer).
func (f *warmFlow) goProgram(j *jail, join []int) error {
	defer closeFds(join)
	if join == nil {
		// By its pid (v2 moves a process by pid only): the program, alive
		// here, waits for this go and cannot end by itself; only a kill
		// from outside (root's, or its zygote's) could end it between the
		// check and the move and let its pid name another process.
		if f.progEnded() {
			return &StageError{Stage: "attach the program to its cgroup", Msg: "the program ended before its start"}
		}
		if err := j.cg.Attach(f.progPid); err != nil {
			return stageErr("attach the program to its cgroup", err)
		}
	}
	if err := f.sendProg(j, msgGo, nil, join); err != nil {
		return stageErr("send the program go", err)
	}
	f.live = true
	return nil
}
