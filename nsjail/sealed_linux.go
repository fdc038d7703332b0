package nsjail

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"agentjail/nsjail/internal/wire"
)

// sealedName is the memfd's name: a jail that could see the init stage's
// /proc/1/exe reads "/memfd:agentjail-init (deleted)", never a host path
// (docs/security.md F07, F08).
const sealedName = "agentjail-init"

// sealedMode: executable by the jail's unprivileged host uid, readable
// only by root. A process that execs a file it cannot read is made
// non-dumpable by the kernel at execve (would_dump), before its first
// instruction, so the init stage is never open to ptrace or to
// /proc/<pid>/mem, not even before Init's own PR_SET_DUMPABLE.
const sealedMode = 0o511

// sealsRequired make the memfd immutable: no write(2), no writable shared
// mapping (F_SEAL_WRITE also fails if one exists, so none can survive),
// no truncation, no growth, and no change to the seals themselves.
// F_SEAL_FUTURE_WRITE adds nothing once F_SEAL_WRITE is set. (The kernel
// adds every write seal itself when F_SEAL_EXEC seals an executable memfd,
// "SEAL_EXEC implies SEAL_WRITE"; they are asked for explicitly so as not
// to depend on it, nor on F_SEAL_EXEC existing.)
const sealsRequired = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE

// SealedExe returns a memfd holding a copy of /proc/self/exe, sealed against
// every write (F_SEAL_SEAL|F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_WRITE, and
// F_SEAL_EXEC where the kernel has it, Linux 6.3+, so that its mode cannot
// change either), close-on-exec, mode 0511. The daemon calls it once at
// start and runs every init stage from it, so that nothing a jail does can
// reach the daemon's binary on disk: the lesson of runc's CVE-2019-5736,
// fixed the same way (runc libcontainer/exeseal).
//
// How to exec it with os/exec: pass it in ExtraFiles and exec
// /proc/self/fd/<3+its index>. Do not exec /proc/self/fd/<f.Fd()>: the
// forked child dup3s its ExtraFiles onto 3, 4, … and moves fds above the
// highest of them before execve resolves the path, so any fd number of the
// daemon's may be overwritten in the child by then. Given in ExtraFiles it
// is inherited without close-on-exec; the init stage's close_range
// (CLOSE_RANGE_CLOEXEC from 3) closes it at the exec of python3.
//
// With vm.memfd_noexec=2 the kernel refuses executable memfds; the error
// says so, and the caller decides whether to run from /proc/self/exe.
func SealedExe() (*os.File, error) {
	src, err := os.Open("/proc/self/exe")
	if err != nil {
		return nil, fmt.Errorf("sealed exe: %w", err)
	}
	defer src.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(src.Fd()), &st); err != nil {
		return nil, fmt.Errorf("sealed exe: fstat /proc/self/exe: %w", &os.SyscallError{Syscall: "fstat", Err: err})
	}

	return sealedCopy("sealed exe", func(fd int) error {
		// Size it first (one allocation of the tmpfs pages), then copy in the
		// kernel: sendfile(2) works from ext4 to the memfd's tmpfs, where
		// copy_file_range(2), which io.Copy tries, answers EXDEV and io.Copy
		// would fall back to 32 KiB reads and writes.
		if err := unix.Ftruncate(fd, st.Size); err != nil {
			return fmt.Errorf("sealed exe: %w", &os.SyscallError{Syscall: "ftruncate", Err: err})
		}
		var off int64
		for off < st.Size {
			n, err := unix.Sendfile(fd, int(src.Fd()), &off, int(min(st.Size-off, 1<<30)))
			if err == unix.EINTR || err == unix.EAGAIN {
				continue
			}
			if err != nil {
				return fmt.Errorf("sealed exe: copy /proc/self/exe: %w", &os.SyscallError{Syscall: "sendfile", Err: err})
			}
			if n == 0 {
				return fmt.Errorf("sealed exe: /proc/self/exe ended at %d bytes of %d", off, st.Size)
			}
		}
		return nil
	})
}

// sealedCopy makes a sealed memfd as SealedExe describes, its content
// written by fill, which is given the memfd's fd; what begins its errors.
func sealedCopy(what string, fill func(fd int) error) (*os.File, error) {
	fd, err := unix.MemfdCreate(sealedName, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		// Before Linux 6.3 there is no MFD_EXEC: every memfd is executable.
		fd, err = unix.MemfdCreate(sealedName, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if errors.Is(err, unix.EACCES) {
		return nil, fmt.Errorf("%s: memfd_create refused an executable memfd (vm.memfd_noexec=2?): %w", what,
			&os.SyscallError{Syscall: "memfd_create", Err: err})
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, &os.SyscallError{Syscall: "memfd_create", Err: err})
	}
	f := os.NewFile(uintptr(fd), "memfd:"+sealedName)
	ok := false
	defer func() {
		if !ok {
			f.Close()
		}
	}()

	if err := fill(fd); err != nil {
		return nil, err
	}
	if err := unix.Fchmod(fd, sealedMode); err != nil {
		return nil, fmt.Errorf("%s: %w", what, &os.SyscallError{Syscall: "fchmod", Err: err})
	}

	seals := sealsRequired | unix.F_SEAL_EXEC
	_, err = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals)
	if errors.Is(err, unix.EINVAL) { // no F_SEAL_EXEC before Linux 6.3
		seals = sealsRequired
		_, err = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, &os.SyscallError{Syscall: "fcntl F_ADD_SEALS", Err: err})
	}
	got, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, &os.SyscallError{Syscall: "fcntl F_GET_SEALS", Err: err})
	}
	if got&seals != seals {
		return nil, fmt.Errorf("%s: seals are %#x, want %#x", what, got, seals)
	}
	ok = true
	return f, nil
}

// SealedStandaloneInit returns a sealed memfd (as SealedExe's) of the
// standalone init this binary embeds (nsjail/boot/standalone), or an
// error saying why there is none. One per process, made at its first
// call and never closed: NewRunner gives it to every Runner as ExeFile,
// and it must not be closed.
func SealedStandaloneInit() (*os.File, error) { return sealedStandalone() }

var sealedStandalone = sync.OnceValues(func() (*os.File, error) {
	if wire.StandaloneInit == nil {
		return nil, errors.New("standalone init: this binary does not import agentjail/nsjail/boot with cgo")
	}
	src, err := wire.StandaloneInit()
	if err != nil {
		return nil, fmt.Errorf("standalone init: %w", err)
	}
	defer src.Close()
	f, err := sealedCopy("standalone init", func(fd int) error {
		// Straight from the binary's read-only data: no copy of it kept.
		var buf [16 << 10]byte
		for {
			n, err := src.Read(buf[:])
			for b := buf[:n]; len(b) > 0; {
				w, err := unix.Write(fd, b)
				if err == unix.EINTR {
					continue
				}
				if err != nil {
					return fmt.Errorf("standalone init: %w", &os.SyscallError{Syscall: "write", Err: err})
				}
				b = b[w:]
			}
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return fmt.Errorf("standalone init: %w", err)
			}
		}
	})
	return f, err
})
