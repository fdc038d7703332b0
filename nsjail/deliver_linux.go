package nsjail

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// programIO are the parent's ends of the program's output pipes.
type programIO struct {
	out, err *os.File
	report   *os.File   // nil: the request has no report channel
	sent     []*childFD // the jail's ends: stdin, stdout, stderr, report
}

// Giving the started jail its request, the shared steps of each flow's
// startProgram, in their order:
//
//	openRequest   the cgroup while the jail builds itself; the
//	              program's stdio
//	awaitBuild    (jail_linux.go) the build's msgReady
//	readyRequest  the run's own set-up (beforeProgram); fd 3
//	sendRequest   msgRequest to the init stage; the cgroup now, if it
//	              was not made while the jail built itself
//	sendGo        the init stage joins the cgroup; msgGo
//	programStarted  the jail's copies of stdio closed here; msgSeccomp:
//	              the program has its filter, whose listener it returns
//
// control, when not nil, is the program's fd 3 instead of a report pipe
// (a zygote's or a session's control socket).

// openRequest starts a request's delivery: the cgroup, created while the
// init stage builds the jail (startedNow: one started for this request;
// a prepared one's is made after its request plan, sendRequest, unless
// cgroupAhead made it with these limits), and the program's stdio (pio,
// and the jail's ends in stdio).
func (j *jail) openRequest() (pio *programIO, stdio []int, startedNow bool, err error) {
	startedNow = j.building
	if startedNow {
		if err := j.createCgroup(); err != nil {
			return nil, nil, false, err
		}
	}
	pio, stdio, err = j.openStdio()
	return pio, stdio, startedNow, err
}

// readyRequest is the last set-up before the request goes, once the jail
// is built: the run's own (beforeProgram), and the program's fd 3 added
// to stdio: control, or the report pipe the spec asks for (none: fd 3 is
// closed in the jail).
func (j *jail) readyRequest(cfg *requestConfig, pio *programIO, stdio []int, control *os.File) ([]int, error) {
	if err := j.beforeProgram(cfg); err != nil {
		return nil, err
	}
	switch {
	case control != nil:
		stdio = append(stdio, int(control.Fd()))
	case j.spec.Report:
		reportW, err := j.reportPipe(pio)
		if err != nil {
			return nil, err
		}
		stdio = append(stdio, reportW.fd)
	}
	_ = j.sync.SetDeadline(time.Now().Add(setupTimeout))
	cfg.ScratchNoexec = j.scratchNoexec // a resize repeats the build's flags
	j.collect = cfg.Collect
	return stdio, nil
}

// sendRequest sends the init stage its request plan with fds, then
// creates the cgroup of a jail that was not started for this request
// (openRequest), while the init stage works on the plan.
func (j *jail) sendRequest(plan []byte, fds []int, startedNow bool) error {
	if err := j.send(msgRequest, plan, fds); err != nil {
		if errors.Is(err, errTooLarge) { // the same in any jail: no retry
			return j.initFailure("send request", err)
		}
		return fmt.Errorf("%w: %w", errNotDelivered, j.initFailure("send request", err))
	}
	if !startedNow {
		return j.createCgroup()
	}
	return nil
}

// programStarted ends a delivery once the program has its go: the
// jail holds its own copies of the program's stdio, closed here; then
// msgSeccomp, which says the program has its filter and brings the
// filter's listener (returned) and, when files are to be collected, the
// /workspace fd.
func (j *jail) programStarted(pio *programIO) (listener int, err error) {
	for _, f := range pio.sent {
		f.Close()
	}
	return j.awaitSeccomp()
}

// beforeProgram is the place for a run's own set-up that needs the run's
// namespaces and must be done before its program starts: it runs once per
// delivery (a run's, a session's, a zygote's own: j.spec tells), in every
// flow, when the jail is built and before msgRequest. The jail's
// namespaces are its pid 1's (/proc/<j.proc.Pid>/ns/net is its network
// namespace, cold or warm). An error fails the delivery: the jail is
// cleaned up. It opens the egress proxy's listener when the spec asks
// for one (network_linux.go).
func (j *jail) beforeProgram(*requestConfig) error { return j.openNetwork() }

// openStdio makes the program's stdin and its stdout and stderr pipes:
// this process's ends in pio, the jail's in stdio (fds 0-2) and in
// pio.sent, closed once delivered.
func (j *jail) openStdio() (*programIO, []int, error) {
	// The jail's ends are plain descriptors, sent and closed: nothing in
	// this process reads or writes them (an os.File would register each
	// with the poller, and set and clear its O_NONBLOCK, for nothing).
	stdin, err := stdinFD(j.spec.Stdin)
	if err != nil {
		return nil, nil, stageErr("stdin", err)
	}
	j.closers = append(j.closers, stdin)
	pio := &programIO{sent: []*childFD{stdin}}
	for _, p := range []struct {
		r     **os.File
		stage string
	}{{&pio.out, "stdout pipe"}, {&pio.err, "stderr pipe"}} {
		r, w, err := childPipe()
		if err != nil {
			return nil, nil, stageErr(p.stage, err)
		}
		*p.r = r
		j.closers = append(j.closers, r, w)
		pio.sent = append(pio.sent, w)
		// The jail's user owns its ends of the pipes, so that a program
		// may reopen them (open("/dev/stdout", "w") goes through
		// /proc/self/fd/1 and checks the pipe's owner and mode 0600, as
		// runc's setupIO knows).
		if err := unix.Fchown(w.fd, int(j.uid), int(j.uid)); err != nil {
			return nil, nil, stageErr("chown stdio pipe", err)
		}
	}
	return pio, []int{pio.sent[0].fd, pio.sent[1].fd, pio.sent[2].fd}, nil
}

// reportPipe makes the request's report channel: its read end in pio,
// its write end the program's fd 3.
func (j *jail) reportPipe(pio *programIO) (*childFD, error) {
	r, w, err := childPipe()
	if err != nil {
		return nil, stageErr("report pipe", err)
	}
	pio.report = r
	j.closers = append(j.closers, r, w)
	pio.sent = append(pio.sent, w)
	return w, nil
}

// createCgroup gives the jail its group with the request's limits: the
// one made ahead (cgroupAhead), renamed to the request's ID, when its
// limits are the request's; else a new one.
func (j *jail) createCgroup() error {
	res := cgroupResources(j.spec.Limits)
	if j.cg != nil {
		if j.cg.Resources() == res && j.cg.Rename(j.spec.ID) == nil {
			return nil
		}
		closeFds(j.join)
		j.join = nil
		err := j.cg.Delete()
		j.cg = nil
		if err != nil {
			return stageErr("delete the cgroup made ahead", err)
		}
	}
	g, err := j.runner.Cgroups.Create(j.spec.ID, res)
	if err != nil {
		return stageErr("create cgroup", err)
	}
	j.cg = g
	return nil
}

// sendGo lets the init stage start the program, once it is in the jail's
// cgroup. On cgroup v1 the init stage moves itself into the group, through
// the files sent with msgGo (JoinFiles: a move by pid from here waits an
// RCU grace period after a quiet spell), and msgGo goes at once: the init
// stage reads it when its request plan is done, and nothing waits for a
// round trip. On v2 (no tasks files: a thread cannot leave its process's
// group alone) this process moves the init stage once its request plan is
// done, then sends msgGo.
func (j *jail) sendGo(startedNow bool) error {
	join := j.join
	j.join = nil
	var err error
	if join == nil {
		if join, err = j.cg.JoinFiles(); err != nil {
			return stageErr("join cgroup", err)
		}
	}
	if len(join) > maxMsgFds { // a message with more is refused whole
		closeFds(join)
		return &StageError{Stage: "join cgroup", Msg: fmt.Sprintf("%d tasks files, more than one message carries (%d)", len(join), maxMsgFds)}
	}
	v2 := join == nil
	var goErr error
	if !v2 {
		goErr = j.send(msgGo, nil, join)
		// The flow closes them (takeJoin): a warm run's program joins the
		// same group with the same files (goProgram).
		j.join = join
	}
	if afterGoHook != nil {
		afterGoHook(j)
	}
	if err := j.expect(msgReady); err != nil {
		// A prepared jail killed while it waited can take the request
		// (the send succeeds) and end before it answers. Only an end
		// without msgReady says so: the init stage writes msgReady before
		// it reads msgGo (queued already on v1), so a deadline that
		// passed with msgReady unread may have let the program run.
		var ended *initEndedError
		if !startedNow && errors.As(err, &ended) && !ended.timedOut {
			err = fmt.Errorf("%w: %w", errNotDelivered, err)
		}
		return err
	}
	if v2 {
		if err := j.cg.Attach(j.proc.Pid); err != nil {
			return stageErr("attach to cgroup", err)
		}
		goErr = j.send(msgGo, nil, nil)
	}
	if goErr != nil {
		return j.initFailure("send go", goErr)
	}
	return nil
}

// takeJoin is the cgroup's tasks files that sendGo sent (v1; nil on
// v2): the caller's to close.
func (j *jail) takeJoin() []int {
	join := j.join
	j.join = nil
	return join
}
