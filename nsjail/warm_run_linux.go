package nsjail

import (
	"context"
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
// ahead (built and forked by the pool: start, prepare), or starts one
// (startRun, start); run then gives it its request (startProgram) and
// supervises it as any jail. start: the bootstrap joins the zygote's user
// and pid namespaces, and pid 1 is held by a pidfd (nestedInit); its
// zygote's failure is watched (zygoteGuard, zygote_watch_linux.go).
// startProgram: the build's msgReady brings the jail's namespaces; the
// zygote forks the program into them (forkProgram, ahead in prepare for a
// run of the pool); the request goes to the init (files only) and to the
// program (stdio, rlimits, the filter); the program joins the group and
// starts (goProgram); from then on the run's messages are the program's
// (jail.peer), and at its msgSeccomp its init adopts it (msgAdopt).

// warmFlow is a warm run's flow (jailFlow).
type warmFlow struct {
	z *zygote // the run's zygote
	// ns are the init's pid, user, network, IPC and UTS namespaces (with
	// the jail's mntns, the ones the fork joins), sent with its build's
	// msgReady, until the fork has them; in the jail's closers.
	ns *fdSet
	// prog is this process's end of the program's socket, on which the
	// program's messages (msgSeccomp, msgExec) and the zygote's msgExit
	// come.
	prog    *os.File
	progPid int          // the program's pid, in this process's pid namespace
	progFD  *os.File     // a pidfd of the program
	guard   *zygoteGuard // the run's zygote's failure, also the jail's guard
}

// startRun starts j (whose uid is acquired) as a run of the current
// zygote: a jail whose user and pid namespaces are made inside the
// zygote's (a warmFlow), built with b. The caller's OS thread must be
// locked until it returns (its bootstrap's parent-death signal), not
// longer.
func (w *warmRuntime) startRun(j *jail, b built) error {
	z := w.current()
	if z == nil {
		return errNoZygote
	}
	f := &warmFlow{z: z}
	j.flow = f
	return f.start(j, b)
}

var errNoZygote = errors.New("no zygote is up")

// start: the bootstrap joins the zygote's user and pid namespaces through
// its pidfd (nestFd), which stays open meanwhile (useNS), and pid 1
// reports its pid with its credentials (bootstrapNested).
func (f *warmFlow) start(j *jail, b built) error {
	z := f.z
	// From here on the run is its zygote's until the clean-up gives it
	// back (zygoteGuard.release), and the namespaces its build brings are
	// closed with the jail's closers.
	f.guard, f.ns = &zygoteGuard{z: z}, &fdSet{}
	j.guard = f.guard
	j.closers = append(j.closers, f.ns)
	if !z.useNS() { // its jail is gone: it died
		return errNoZygote
	}
	env := []string{nestEnv + "=" + strconv.FormatUint(uint64(zygoteUID(j.uid, j.runner.UIDs.Base)), 10)}
	boot, err := j.launch(env, z.nsRef)
	if err == nil {
		var pidfd *os.File
		if j.proc, pidfd, err = bootstrapNested(j.sync, boot); err == nil {
			j.pid1 = &nestedInit{proc: j.proc, pidfd: pidfd}
		}
	}
	z.doneNS()
	if err == nil {
		err = j.sendBuild(b)
	}
	if err != nil && zygoteEnded(z) {
		// The zygote died while this run joined it (its pid namespace
		// gone, the pidfd's process reaped): the run is not its to fail,
		// it goes cold, as if none had been up.
		return errNoZygote
	}
	return err
}

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

// prepare: a warm run's program is forked ahead too: the request finds
// it in the jail's namespaces, waiting for its part.
func (f *warmFlow) prepare(j *jail, l Limits) error {
	if err := f.awaitNS(j); err != nil {
		return err
	}
	if err := j.cgroupAhead(l); err != nil {
		return err
	}
	return f.forkProgram(j)
}

// awaitNS waits for the build (jail.awaitBuild), whose msgReady brings
// the init's namespaces.
func (f *warmFlow) awaitNS(j *jail) error {
	ns, err := j.awaitBuild(nestedNS)
	if ns != nil {
		f.ns.fds = ns
	}
	return err
}

// startProgram: the init gets the files; the program, forked now if it
// was not ahead, gets its part (stdio, rlimits, the filter) while the
// init writes them; the program joins the group and starts; its init
// adopts it once it has its filter.
func (f *warmFlow) startProgram(j *jail, cfg *requestConfig, control *os.File) (*programIO, int, error) {
	pio, stdio, startedNow, err := j.openRequest()
	if err != nil {
		return nil, -1, err
	}
	// A jail started now has built itself while the above was done here.
	if err := f.awaitNS(j); err != nil {
		return nil, -1, err
	}
	if stdio, err = j.readyRequest(cfg, pio, stdio, control); err != nil {
		return nil, -1, err
	}
	if f.prog == nil {
		if err := f.forkProgram(j); err != nil {
			return nil, -1, err
		}
	}
	if err := j.sendRequest(adoptPlan(cfg, j.tmpBytes), nil, startedNow); err != nil {
		return nil, -1, err
	}
	// One that ended while it waited ran nothing of the request.
	if f.progEnded() {
		return nil, -1, fmt.Errorf("%w: %w", errNotDelivered, &StageError{Stage: "send the program its request", Msg: "the program forked ahead has ended"})
	}
	if err := f.sendProg(j, msgRequest, programPlan(cfg, f.z.w.base.seccomp(j.runner)), stdio); err != nil {
		return nil, -1, fmt.Errorf("%w: %w", errNotDelivered, stageErr("send the program its request", err))
	}
	if err := j.sendGo(startedNow); err != nil {
		return nil, -1, err
	}
	if err := f.goProgram(j, j.takeJoin()); err != nil {
		return nil, -1, err
	}
	listener, err := j.programStarted(pio)
	if err != nil {
		return nil, -1, err
	}
	// The program exists: its init watches it from now on, and ends the
	// jail when it ends, on this pidfd of it. An init gone already was
	// killed: the wait sees it.
	_ = j.send(msgAdopt, nil, []int{int(f.progFD.Fd())})
	return pio, listener, nil
}

func (f *warmFlow) run(ctx context.Context, j *jail, spec *Spec, cfg *requestConfig) (res *Result, err error) {
	defer j.settle(&res, &err)
	j.spec = spec
	pio, listener, err := f.startProgram(j, cfg, nil)
	if err != nil {
		return nil, err
	}
	res, err = j.supervise(ctx, pio, listener)
	return markWarm(res), err
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
	sent := append([]int{child.fd, int(j.mntns.Fd())}, f.ns.fds...)
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
	f.ns.Close()
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
	f.guard.prog = f.progFD
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
// run's from then on (jail.peer).
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
	j.peer = f.prog
	return nil
}

// fdSet is descriptors this process holds for a while and may hand over:
// closed once, however often Close is called.
type fdSet struct{ fds []int }

func (s *fdSet) Close() error {
	closeFds(s.fds)
	s.fds = nil
	return nil
}
