package nsjail

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"agentjail/cgroup"
)

// The life of one jail, from the parent's side. Each flow writes its
// steps top to bottom in its own file (jailFlow: coldFlow in
// flow_linux.go, warmFlow in warm_run_linux.go), calling the shared ones
// here and in deliver_linux.go, handshake_linux.go, supervise_linux.go:
//
//	start         launch (the bootstrap), its report (pid1), sendBuild
//	prepare       a jail made ahead of its request: awaitBuild, its cgroup
//	              (and a warm run's program, forked ahead)
//	run           startProgram, supervise; settle: cleanup, whatever happened
//	  startProgram  the cgroup, the program's stdio, awaitBuild, msgRequest,
//	                msgGo (deliver_linux.go), the program's msgSeccomp
//	  supervise     msgExec; the watchdog over the limits (watchdog_linux.go);
//	                wait; the result (supervise_linux.go)
//	  cleanup       kill and wait if need be; pid 1's handle and the guard
//	                given back; the mount namespace; the cgroup
//
// A session holds a jail of either flow for its life: its flow's
// startProgram, then the same supervision its own way (session_linux.go:
// Session.open, life; a call: session_call_linux.go). How pid 1 is held
// differs by flow (pid1_linux.go), and so does what else may fail the
// jail (runGuard, zygote_watch_linux.go): the flow's start sets both.
// The conversation itself is drawn in protocol.go; reading the init
// stage's messages is handshake_linux.go's.

// afterExecHook, set by a test only, runs once the program has been
// exec'd: a place to fail a run in. afterGoHook runs when msgGo has been
// sent (v1) or would be next (v2), before msgReady is read. beforeExecHook
// runs when msgSeccomp has been read, before msgExec is: a busy daemon.
var (
	afterExecHook  func()
	afterGoHook    func(*jail)
	beforeExecHook func()
)

// jail is the parent's view of one run: what every flow shares (the
// sync socket, the cgroup, the mount namespace, the kill reason, the
// clean-up). What differs between a cold jail and a warm run is its flow
// (flow_linux.go, warm_run_linux.go).
type jail struct {
	runner *Runner
	spec   *Spec
	uid    uint32
	flow   jailFlow
	pid1   pid1     // how its pid 1 is held, once started (the flow's start)
	guard  runGuard // what else may fail the jail (a warm run's zygote)

	cg        *cgroup.Group
	join      []int       // v1: cg's tasks files, when cg was made ahead (cgroupAhead)
	proc      *os.Process // the jail's pid 1: the init stage, which stays as the jail's init
	workspace *os.File    // /workspace of the jail, for Collect; nil unless asked
	collect   bool        // the request asked for /workspace (requestConfig.Collect)
	sync      *os.File    // parent's end of the socketpair
	// peer is the socket the run's next messages come on: sync, or a
	// warm run's program's once it has its go (warmFlow.goProgram).
	peer    *os.File
	closers []io.Closer

	// mntns is the jail's mount namespace, sent with the build's
	// msgReady. Received close-on-exec (recvMsg), so no child of this
	// process holds it; nothing of the jail can reach its mounts through
	// it either: only this process has it. The jail's uid goes back to
	// the pool when Run returns, possibly before a light jail's mntns is
	// closed, with its tmpfs files still owned by that uid: safe because
	// no process of the jail is left and nothing may setns into mntns or
	// pass it on.
	mntns *os.File
	// lightTeardown: the jail stored little (lightTeardown): cleanup may
	// release mntns after its return.
	lightTeardown bool
	building      bool  // msgBuild sent, its msgReady not read yet
	waited        bool  // pid 1's end has been seen (wait)
	tmpBytes      int64 // the size of the scratch tmpfs msgBuild mounted
	scratchNoexec bool  // and whether it is noexec (built.noexec)

	mu     sync.Mutex
	reason KillReason // the first evidence that ended the jail
}

// kill ends the whole jail: SIGKILL to its PID 1 makes the kernel kill
// every process of its pid namespace. The first reason recorded wins.
func (j *jail) kill(reason KillReason) {
	j.mu.Lock()
	first := j.reason == ""
	if first {
		j.reason = reason
	}
	j.mu.Unlock()
	if first && j.proc != nil {
		_ = j.proc.Signal(syscall.SIGKILL)
	}
}

func (j *jail) killReason() KillReason {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.reason
}

// launch starts the jail's bootstrap, the first step of every flow's
// start: a plain vfork and exec of this binary, with the jail's host uid
// and env in its environment, and nest, when not nil, as fd nestFd (a
// warm run's: a pidfd of its zygote's jail, whose user and pid namespaces
// it joins; its sync socket then passes the sender's credentials, which
// give its pid 1's pid). The caller reads the bootstrap's report (pid1)
// on j.sync, and sends the build (sendBuild). The caller's OS thread must
// be locked: the bootstrap's Pdeathsig is tied to it. It must stay locked
// until the jail has been waited for if its pid1 is threadBound (a cold
// jail), else until the report has been read.
func (j *jail) launch(env []string, nest *os.File) (*os.Process, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, stageErr("socketpair", err)
	}
	childSync := os.NewFile(uintptr(fds[1]), "sync-child")
	defer childSync.Close()                                // on the early returns; closed at the start below
	if err := unix.SetNonblock(fds[0], true); err != nil { // pollable: deadlines work
		unix.Close(fds[0])
		return nil, stageErr("socketpair", err)
	}
	j.sync = os.NewFile(uintptr(fds[0]), "sync")
	j.peer = j.sync
	j.closers = append(j.closers, j.sync)
	if nest != nil {
		if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
			return nil, stageErr("socketpair", err)
		}
	}
	// The program's stdio arrives with its request (msgRequest); until
	// then the init stage has /dev/null.
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, stageErr("open /dev/null", err)
	}
	defer null.Close()

	// fd 3 (reportFd) holds /dev/null until msgRequest brings the report
	// channel (or nothing, and the init stage closes it), so that no fd the
	// init stage receives can take that number. fd 4 = syncFd, fd 5 =
	// execFd (or /dev/null), fd 6 = nestFd. Every fd of this process
	// without close-on-exec reaches the bootstrap, which closes all above
	// its own first thing: Go opens all of its own files close-on-exec,
	// and so must any code linked into the daemon.
	exe, extra := j.runner.Exe, []*os.File{null, childSync}
	if j.runner.ExeFile != nil {
		exe, extra = fmt.Sprintf("/proc/self/fd/%d", execFd), append(extra, j.runner.ExeFile)
	}
	if nest != nil {
		if len(extra) == execFd-3 {
			extra = append(extra, null)
		}
		extra = append(extra, nest)
	}
	// A plain vfork and exec: the bootstrap (bootstrap_linux.c) makes the
	// user and pid namespaces itself, so this process's page tables are
	// not copied (Go forks in full for a clone with CLONE_NEWUSER).
	boot, err := os.StartProcess(exe, []string{initArg0}, &os.ProcAttr{
		// Nothing but the jail's host uid and the flow's part: no Go
		// runtime starts there (init_linux.c), and the program gets an
		// environment of its own.
		Env:   append([]string{uidEnv + "=" + strconv.FormatUint(uint64(j.uid), 10)}, env...),
		Files: append([]*os.File{null, null, null}, extra...),
		// If this thread dies (the daemon crashed), the bootstrap dies.
		// A cold jail's pid 1 ties its own parent-death signal to this
		// same thread, which the caller then holds locked until the jail
		// has been waited for (pid1.threadBound); a warm run's pid 1 dies
		// with its zygote's jail instead.
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	// Closed now, not at return: a bootstrap that dies without a record
	// must give EOF at once, not leave its report's read waiting for
	// setupTimeout.
	childSync.Close()
	if err != nil {
		return nil, stageErr("start init stage", err)
	}
	_ = j.sync.SetDeadline(time.Now().Add(setupTimeout))
	return boot, nil
}

// sendBuild sends the started init stage its build, the last step of
// every flow's start; awaitBuild waits for the end of it, so that the
// caller may do its own part of the set-up meanwhile.
func (j *jail) sendBuild(b built) error {
	j.tmpBytes, j.scratchNoexec = b.tmpBytes, b.noexec
	var etc []int
	if b.etc != nil {
		fd, err := etcClone(b.etc)
		if err != nil {
			return j.initFailure("clone /etc", err)
		}
		defer unix.Close(fd)
		etc = []int{fd}
	}
	if err := j.send(msgBuild, b.plan, etc); err != nil {
		return j.initFailure("send build plan", err)
	}
	j.building = true
	return nil
}

// awaitBuild waits for the end of the init stage's build, if sendBuild's
// msgBuild is still unanswered: its msgReady brings the jail's mount
// namespace and ns more namespaces (a warm run's), which it returns.
func (j *jail) awaitBuild(ns int) ([]int, error) {
	if !j.building {
		return nil, nil
	}
	j.building = false
	fds, err := j.expectFds(msgReady, 1+ns)
	if err != nil {
		return nil, err
	}
	// Taken for the jail's namespaces unchecked: only the init stage can
	// send them, before any of the request's code has run.
	j.mntns = os.NewFile(uintptr(fds[0]), "mntns")
	return fds[1:], nil
}

// cgroupAhead makes a prepared jail's cgroup before its request, with
// the limits of l, and opens its tasks files (JoinFiles), so that the
// request's run has no cgroup to make on its way to the exec: on cgroup
// v1 only, where the group can take the request's ID as its name then
// (v2 cannot rename, and moves the process from here anyway). The group is
// empty until the init stage joins it: nothing is counted before.
func (j *jail) cgroupAhead(l Limits) error {
	m := j.runner.Cgroups
	if m.Version() != cgroup.V1 {
		return nil
	}
	g, err := m.Create("prepared-"+NewID(), cgroupResources(l))
	if err != nil {
		return stageErr("create cgroup", err)
	}
	j.cg = g
	if j.join, err = g.JoinFiles(); err != nil {
		return stageErr("join cgroup", err)
	}
	return nil
}

// initTasks is what the jail's own init adds to the program's tasks in
// its cgroup: itself. The pids limit is the program's (processes and
// threads), so the group's is one more, and pids_peak is the group's less
// this one.
const initTasks = 1

// cgroupResources are the cgroup's part of l.
func cgroupResources(l Limits) cgroup.Resources {
	return cgroup.Resources{MemoryBytes: l.MemoryBytes, Pids: l.Pids + initTasks, CPUs: l.CPUs}
}

// errNotDelivered marks a prepared jail that was gone before its request
// reached it.
var errNotDelivered = errors.New("the prepared jail ended before it got the request")

// settle ends a run, deferred by each flow's run: it cleans up after
// the jail whatever happened, and joins a clean-up's failure to the run's
// answer (res, err). A panic on the way still kills, waits for and
// removes the jail before it goes on: the caller's locked thread, and the
// uid, must outlive the jail.
func (j *jail) settle(res **Result, err *error) {
	if v := recover(); v != nil {
		_ = j.cleanup()
		panic(v)
	}
	if cerr := j.cleanup(); cerr != nil {
		cerr = fmt.Errorf("%w: %v", ErrCleanup, cerr)
		if *err == nil && *res != nil {
			*err = cerr
			return
		}
		*err = errors.Join(*err, cerr)
	}
}

func (j *jail) cleanup() error {
	for _, c := range j.closers {
		c.Close()
	}
	j.closers = nil
	closeFds(j.join)
	j.join = nil
	if j.proc != nil && !j.waited {
		// Set-up failed after the start: the init stage must not outlive us.
		_ = j.proc.Kill()
		_ = j.wait()
	}
	if j.pid1 != nil {
		j.pid1.release()
	}
	j.guard.release()
	// The file system goes before the cgroup: a heavy jail's tmpfs pages
	// are uncharged from a live group, not left to a dying one.
	if f := j.mntns; f != nil {
		// The last reference: the kernel unmounts the jail's file system
		// now, which waits for an expedited RCU grace period. Off the
		// caller's way to its answer (Runner.Close waits for it), but only
		// for a jail that stored little: what is left in its tmpfs is
		// freed with it, and must not outlive the run by much.
		j.mntns = nil
		if j.lightTeardown {
			j.runner.teardowns.Go(func() { f.Close() })
		} else {
			f.Close()
		}
	}
	var err error
	if j.cg != nil {
		err = j.cg.Delete()
		j.cg = nil
	}
	return err
}

// lightTeardownBytes: a jail that stored at most this much has its mount
// namespace released after the answer (jail.cleanup). An empty program's
// memory peaks at about 3 MiB.
const lightTeardownBytes = 16 << 20

// lightTeardown tells whether a jail whose cgroup's memory peaked at peak
// bytes (-1: unknown) stored at most lightTeardownBytes. The request's
// files and code were written before the init stage joined the group
// and charged to the caller (MaxFilesBytes), so the peak does not count
// them: they are added.
func lightTeardown(peak int64, s *Spec) bool {
	return peak >= 0 && peak+s.writtenBytes() <= lightTeardownBytes
}

// stdinFD is the program's stdin: /dev/null, or a sealed memfd holding
// the request's bytes (no writer goroutine, and a program that never reads
// it blocks nothing).
func stdinFD(data []byte) (*childFD, error) {
	if data == nil {
		fd, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, os.NewSyscallError("open /dev/null", err)
		}
		return &childFD{fd}, nil
	}
	return sealedFD("stdin", data)
}

// sealedFD is a memfd named name that holds data, read from its start,
// sealed against every change (the stdin of a run; a session's call's
// payload too).
func sealedFD(name string, data []byte) (*childFD, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, os.NewSyscallError("memfd_create", err)
	}
	f := &childFD{fd}
	for b := data; len(b) > 0; {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			f.Close()
			return nil, os.NewSyscallError("write "+name, err)
		}
		b = b[n:]
	}
	if _, err := unix.Seek(fd, 0, io.SeekStart); err != nil {
		f.Close()
		return nil, os.NewSyscallError("seek "+name, err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL); err != nil {
		f.Close()
		return nil, os.NewSyscallError("seal "+name, err)
	}
	return f, nil
}

// childFD is a descriptor this process only hands to a jail: closed once,
// however often Close is called (it is in the jail's closers, and closed
// as soon as it is sent).
type childFD struct{ fd int }

func (c *childFD) Close() error {
	if c == nil || c.fd < 0 {
		return nil
	}
	err := unix.Close(c.fd)
	c.fd = -1
	return err
}

// childPipe is a pipe whose read end this process reads (in the runtime's
// poller) and whose write end goes to a jail (blocking, as a program's
// stdout is).
func childPipe() (*os.File, *childFD, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	if err := unix.SetNonblock(p[0], true); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, nil, os.NewSyscallError("set nonblock", err)
	}
	return os.NewFile(uintptr(p[0]), "pipe"), &childFD{p[1]}, nil
}
