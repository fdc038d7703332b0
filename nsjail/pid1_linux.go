package nsjail

import (
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// pid1 is how this process holds a started jail's pid 1, its init: a
// cold jail's is this process's child (childInit), a warm run's an
// orphan in its zygote's pid namespace, held by a pidfd (nestedInit).
// The flow's start sets it (jail.pid1), with jail.proc; the shared steps
// wait on it.
type pid1 interface {
	// wait waits for pid 1's end; once it has (nil), again is nothing.
	wait() error
	// awaitKilled waits, at most timeout and on this thread, for pid 1's
	// end after a kill.
	awaitKilled(timeout time.Duration)
	// state is pid 1's own end, when it is known and says something of
	// the program (a cold jail's, once waited for); nil else.
	state() *os.ProcessState
	// threadBound tells whether the jail dies with the OS thread that
	// started it, which must then stay locked until it has been waited
	// for.
	threadBound() bool
	// release gives back the handle, once pid 1 has been waited for.
	release()
	// netns is a handle on pid 1's network namespace that setns takes,
	// which the caller closes (the egress proxy's listener is opened in
	// it: jail.openNetwork).
	netns() (*os.File, error)
}

// childInit is a cold jail's pid 1: this process's child, with a
// parent-death signal tied to the thread that started it.
type childInit struct {
	proc *os.Process
	st   *os.ProcessState // its end, once waited for
}

func (c *childInit) wait() error {
	if c.st != nil {
		return nil
	}
	awaitExit(c.proc.Pid)
	st, err := c.proc.Wait()
	if err != nil {
		return err
	}
	c.st = st
	return nil
}

func (c *childInit) awaitKilled(timeout time.Duration) { awaitExitFor(c.proc.Pid, timeout) }

// state: pid 1's own end, which a kill of the whole jail ended, or which
// explains a broken conversation; nil until it has been waited for (or
// when its wait failed).
func (c *childInit) state() *os.ProcessState { return c.st }
func (c *childInit) threadBound() bool       { return true }
func (c *childInit) release()                {}

// netns: pid 1 is this process's child, not waited for yet: its
// /proc/PID/ns/net is its own.
func (c *childInit) netns() (*os.File, error) {
	return os.Open("/proc/" + strconv.Itoa(c.proc.Pid) + "/ns/net")
}

// nestedInit is a warm run's pid 1: not this process's child
// (bootstrapNested) but an orphan of its zygote's pid namespace, whose
// init reaps it. It is held by a pidfd, its end seen on it, and never
// waited for. Its bootstrap, the only process of the run with a
// parent-death signal, has been waited for by the start, and it dies with
// its zygote's jail (bootstrap_linux.c): nothing of it is bound to a
// thread.
type nestedInit struct {
	proc  *os.Process // jail.proc, which signals it: released here
	pidfd *os.File
	ended bool
}

func (n *nestedInit) wait() error {
	if !n.ended {
		awaitPidfd(n.pidfd)
		n.ended = true
	}
	return nil
}

func (n *nestedInit) awaitKilled(timeout time.Duration) { pollPidfd(int(n.pidfd.Fd()), timeout) }

// state: pid 1 ends as its program does, and is never waited for: its
// own end says nothing (the program's status comes with msgExit).
func (n *nestedInit) state() *os.ProcessState { return nil }
func (n *nestedInit) threadBound() bool       { return false }

// release: its handles, released here, not at the garbage collector's
// will (it is never waited for, which would release them). jail.proc,
// the same process, signals nothing from then on.
func (n *nestedInit) release() {
	if n.proc != nil {
		_ = n.proc.Release()
		n.proc = nil
	}
	if n.pidfd != nil {
		n.pidfd.Close()
		n.pidfd = nil
	}
}

// netns: setns takes a pidfd for its process's namespaces; a copy of
// the run's, which it keeps.
func (n *nestedInit) netns() (*os.File, error) {
	fd, err := unix.FcntlInt(n.pidfd.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("dup pidfd", err)
	}
	return os.NewFile(uintptr(fd), "pidfd"), nil
}
