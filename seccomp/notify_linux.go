//go:build linux

package seccomp

import (
	"context"
	"fmt"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Kernel structures of the user-notification protocol (linux/seccomp.h).
type seccompData struct {
	Nr                 int32
	Arch               uint32
	InstructionPointer uint64
	Args               [6]uint64
}

type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// The ioctl numbers encode these sizes; a mismatch would be a silent EINVAL.
var (
	_ [80 - unsafe.Sizeof(seccompNotif{})]byte
	_ [unsafe.Sizeof(seccompNotif{}) - 80]byte
	_ [24 - unsafe.Sizeof(seccompNotifResp{})]byte
	_ [unsafe.Sizeof(seccompNotifResp{}) - 24]byte
)

// Supervise answers the notifications of one jail's listener (from Install)
// until every process of the jail has exited and been reaped (the listener
// then polls POLLHUP: Supervise returns nil) or ctx is done (it returns
// ctx.Err()). It closes notifyFd before it returns. Closing the listener
// while the jail still runs is safe: a forbidden call then fails with ENOSYS.
//
// The protocol, one round per forbidden call:
//
//	kernel: the jail thread blocks in its call; the listener polls POLLIN
//	Supervise: ioctl(SECCOMP_IOCTL_NOTIF_RECV) → {id, pid, nr, arch, args}
//	Supervise: names the arguments the filter forbade it for (Detail) and
//	           counts nr with them in c (a foreign ABI apart)
//	Supervise: ioctl(SECCOMP_IOCTL_NOTIF_SEND, {id, error: -EPERM, flags: 0})
//	kernel: the call returns -1/EPERM in the jail
//
// It never answers SECCOMP_USER_NOTIF_FLAG_CONTINUE, so no call the filter
// forbids ever runs, and the time-of-check/time-of-use race on pointer
// arguments that makes user notification unfit to *decide* anything
// (linux/seccomp.h) does not apply: the filter decided, this only observes.
//
// A foreign-ABI call (i386 `int 0x80`, x32, another architecture) is
// notified like any other forbidden call; Supervise marks it
// Violation.Foreign, counts it apart (Collector.Foreign, CallCount.ABI) and
// answers it EPERM too. It never answers CONTINUE, so a foreign call never
// runs; with no listener (Supervise gone) the kernel answers ENOSYS.
//
// onViolation, if not nil, is called on Supervise's goroutine for every
// forbidden call, after it was counted. In ModeErrno it is called after the
// answer, so the jail does not wait for it, except for a Foreign or an
// OverBudget call, for which it is called before the answer in both modes. In ModeKill it is
// called before the answer: the caller kills the jail in it, and the blocked
// thread is answered (EPERM) only afterwards, so the process that made the
// call does not run again if the kill worked. Further violations that were
// already queued are still counted and passed on; the kill must be
// idempotent. A caller must end the jail for a Foreign or an OverBudget
// violation whatever the mode: the first is no program's business, the
// second bounds the daemon's work for one jail (MaxNotifications).
func Supervise(ctx context.Context, notifyFd int, mode Mode, c *Collector, onViolation func(Violation)) error {
	if mode != ModeErrno && mode != ModeKill {
		unix.Close(notifyFd)
		return fmt.Errorf("seccomp: supervise: invalid mode %d", int(mode))
	}
	if c == nil {
		c = new(Collector)
	}
	// Non-blocking, so that os.NewFile registers it with the runtime's
	// poller: waiting costs no thread, and a deadline interrupts the wait.
	if err := unix.SetNonblock(notifyFd, true); err != nil {
		unix.Close(notifyFd)
		return fmt.Errorf("seccomp: supervise: %w", os.NewSyscallError("fcntl(O_NONBLOCK)", err))
	}
	f := os.NewFile(uintptr(notifyFd), "seccomp-listener")
	defer f.Close()
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		return fmt.Errorf("seccomp: supervise: listener is not pollable: %w", err)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("seccomp: supervise: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()

	for {
		var (
			n     seccompNotif
			state recvState
			rerr  error
		)
		err := rc.Read(func(fd uintptr) bool {
			state, rerr = receive(int(fd), &n)
			return state != recvWait
		})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("seccomp: supervise: %w", err)
		}
		switch state {
		case recvGone:
			return nil
		case recvError:
			return fmt.Errorf("seccomp: supervise: %w", rerr)
		case recvRetry:
			continue
		}

		v := Violation{Number: int(n.Data.Nr), Pid: int(n.Pid), Args: n.Data.Args, Arch: n.Data.Arch}
		v.Foreign = v.ABI() != ""
		if !v.Foreign {
			v.Syscall = SyscallName(v.Number)
			v.Detail = Detail(v.Syscall, v.Args)
		}
		v.OverBudget = c.AddViolation(v) > MaxNotifications
		// Before the answer: in ModeKill, and in either mode for a
		// foreign-ABI call or one past the budget (the caller ends the
		// jail for them, and the call must not return first).
		before := mode == ModeKill || v.Foreign || v.OverBudget
		if before && onViolation != nil {
			onViolation(v)
		}
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = answerEPERM(int(fd), n.ID) }); err != nil {
			return fmt.Errorf("seccomp: supervise: %w", err)
		}
		if serr != nil {
			return fmt.Errorf("seccomp: supervise: %w", serr)
		}
		if !before && onViolation != nil {
			onViolation(v)
		}
	}
}

type recvState int

const (
	recvWait  recvState = iota // nothing pending: wait for the poller
	recvGot                    // n holds a notification
	recvRetry                  // the notification went away (its thread was killed or interrupted)
	recvGone                   // no process uses the filter any more
	recvError
)

// receive takes one notification if one is pending. The RECV ioctl blocks
// whatever O_NONBLOCK says, so poll first: POLLIN means a notification
// waits, POLLHUP that the filter has no users left (Linux 5.8+).
func receive(fd int, n *seccompNotif) (recvState, error) {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(pfd, 0)
		if err == nil {
			break
		}
		if err != unix.EINTR {
			return recvError, os.NewSyscallError("poll", err)
		}
	}
	switch {
	case pfd[0].Revents&unix.POLLIN != 0:
		*n = seccompNotif{} // the kernel wants a zeroed buffer
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(n)))
		switch e {
		case 0:
			return recvGot, nil
		case unix.ENOENT, unix.EINTR:
			return recvRetry, nil
		}
		return recvError, os.NewSyscallError("ioctl(SECCOMP_IOCTL_NOTIF_RECV)", e)
	case pfd[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0:
		return recvGone, nil
	}
	return recvWait, nil
}

// answerEPERM makes the notified call fail with EPERM. ENOENT means the
// thread is no longer waiting (killed, or interrupted by a signal, in which
// case the call restarts and is notified again): nothing to answer.
func answerEPERM(fd int, id uint64) error {
	resp := seccompNotifResp{ID: id, Error: -int32(unix.EPERM)}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp)))
	if e != 0 && e != unix.ENOENT {
		return os.NewSyscallError("ioctl(SECCOMP_IOCTL_NOTIF_SEND)", e)
	}
	return nil
}
