//go:build linux

package seccomp

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Install loads p on the calling thread and returns the listener: the file
// descriptor on which the kernel reports every forbidden call (Supervise
// reads it). The descriptor is close-on-exec.
//
// The jail's init stage (nsjail/boot/init_run_linux.c, C) makes the same two calls
// itself, as its last steps before execve:
//
//	mounts, pivot_root, identity, rlimits, capabilities dropped, close_range
//	  → Install: prctl(PR_SET_NO_NEW_PRIVS, 1)
//	             seccomp(SECCOMP_SET_MODE_FILTER, NEW_LISTENER|WAIT_KILLABLE_RECV, prog)
//	  → sendmsg(listener → parent, SCM_RIGHTS); close(listener)
//	  → execve(python3)
//
// as late as possible, because from Install on every system call of this
// thread is filtered: only calls the policy allows may follow (sendmsg,
// close, close_range, execve, and what the Go runtime does on a locked
// thread: futex, mmap, munmap, madvise, nanosleep, sched_yield, rt_sig*,
// sigaltstack, gettid, tgkill, clone without CLONE_NEW*, exit, write;
// TestPolicyAllowsInitTail checks them). The listener must never reach the
// jail: a process holding it could answer its own notifications with
// SECCOMP_USER_NOTIF_FLAG_CONTINUE and run any forbidden call.
//
// The caller must hold runtime.LockOSThread and must be the thread that calls
// execve. Only this thread is filtered (no TSYNC: the other threads are the
// Go runtime's own, trusted, and execve ends them); a goroutine that is not
// locked could be moved to an unfiltered thread before execve (runc #1212).
//
// Install only makes those two system calls: no allocation, no libseccomp.
func Install(p *Program) (notifyFd int, err error) {
	if p == nil {
		return -1, fmt.Errorf("seccomp: install: no program")
	}
	if err := p.check(); err != nil {
		return -1, err
	}
	prog := unix.SockFprog{Len: uint16(len(p.Instructions)), Filter: &p.Instructions[0]}

	// no_new_privs first: the kernel refuses a filter from a task without
	// CAP_SYS_ADMIN unless it is set, and it must hold for execve anyway.
	if _, _, e := unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); e != 0 {
		return -1, fmt.Errorf("seccomp: install: %w", os.NewSyscallError("prctl(PR_SET_NO_NEW_PRIVS)", e))
	}
	// WAIT_KILLABLE_RECV (5.19+): once the supervisor has received a
	// notification, only a fatal signal interrupts the waiting thread.
	// Without it any signal (a Go runtime's preemption, a Python SIGALRM)
	// withdraws the call, which restarts and is notified and counted again.
	fd, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, uintptr(unsafe.Pointer(&prog)))
	if e == unix.EINVAL {
		fd, _, e = unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
			unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&prog)))
	}
	runtime.KeepAlive(p)
	if e != 0 {
		err := fmt.Errorf("seccomp: install: %w", os.NewSyscallError("seccomp(SECCOMP_SET_MODE_FILTER, NEW_LISTENER)", e))
		if e == unix.EBUSY {
			// Only one listener per filter chain: something above us (a
			// container runtime's seccomp agent) already has one.
			err = fmt.Errorf("%w: this process is already under a seccomp filter with a listener", err)
		}
		if e == unix.EINVAL || e == unix.ENOSYS {
			// Linux < 5.0 has no user notification; a malformed program
			// also gives EINVAL, but Compile does not make those.
			err = fmt.Errorf("%w (%w)", err, errUnsupported)
		}
		return -1, err
	}
	return int(fd), nil
}
