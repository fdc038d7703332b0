package cgroup

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Raw-syscall file helpers. os.Open on a cgroup file costs an extra
// epoll_ctl (kernfs files are pollable) and an allocation; these do
// exactly open+read+close or open+write+close.

// smallBuf is enough for every single-value and flat-keyed file we read
// (cpu.stat with all v2 keys is < 400 bytes); bigger files are read in a
// loop.
const smallBuf = 512

func retryEINTR(f func() error) error {
	for {
		if err := f(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

func openFile(path string, flags int) (int, error) {
	return openAt(unix.AT_FDCWD, path, flags)
}

// openAt opens path relative to the directory dirfd (AT_FDCWD: the
// working directory, or path is absolute).
func openAt(dirfd int, path string, flags int) (int, error) {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Openat(dirfd, path, flags|unix.O_CLOEXEC, 0)
		return err
	})
	return fd, err
}

// readAt reads a whole kernfs file from fd at offset 0. A seq_file produces
// everything that fits in one read, so a short read is the whole file.
func readAt(fd int, buf []byte) ([]byte, error) {
	total := 0
	for {
		var n int
		err := retryEINTR(func() (err error) {
			n, err = unix.Pread(fd, buf[total:], int64(total))
			return err
		})
		if err != nil {
			return nil, err
		}
		total += n
		if n == 0 || total < len(buf) {
			return buf[:total], nil
		}
		nb := make([]byte, 2*len(buf))
		copy(nb, buf)
		buf = nb
	}
}

// readFile reads a small kernfs file with one open, one read and one close.
func readFile(path string, buf []byte) ([]byte, error) {
	fd, err := openFile(path, unix.O_RDONLY)
	if err != nil {
		return nil, err
	}
	data, err := readAt(fd, buf)
	unix.Close(fd)
	return data, err
}

// writeFile writes data to an existing kernfs file (no O_CREAT, no
// O_TRUNC: neither means anything there).
func writeFile(path string, data []byte) error {
	return writeFileAt(unix.AT_FDCWD, path, data)
}

// writeFileAt is writeFile of path relative to the directory dirfd.
func writeFileAt(dirfd int, path string, data []byte) error {
	fd, err := openAt(dirfd, path, unix.O_WRONLY)
	if err != nil {
		return err
	}
	err = retryEINTR(func() error {
		_, err := unix.Write(fd, data)
		return err
	})
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	return err
}

// writeProcs moves pid into the group whose cgroup.procs is path. A task
// still in TASK_NEW (just forked) gives EINVAL for a moment: retry as runc
// and containerd do, briefly.
func writeProcs(path string, pid int) error {
	var b [20]byte
	data := strconv.AppendInt(b[:0], int64(pid), 10)
	var err error
	for i := 0; i < 5; i++ {
		if err = writeFile(path, data); !errors.Is(err, unix.EINVAL) {
			return err
		}
		time.Sleep(time.Millisecond << i)
	}
	return err
}

// exists reports whether path exists (one stat).
func exists(path string) bool {
	var st unix.Stat_t
	return unix.Stat(path, &st) == nil
}

// writable reports whether the file at path has any write bit (kernfs sets
// the mode from the presence of a write handler; memory.peak became
// writable in 6.12).
func writable(path string) bool {
	var st unix.Stat_t
	return unix.Stat(path, &st) == nil && st.Mode&0o222 != 0
}

// lockDir opens dir and takes a non-blocking exclusive flock on it. The
// lock marks a group as owned by a live Group; the kernel drops it when
// the owning process dies, which is what makes Stale exact.
func lockDir(dir string) (int, error) {
	return lockDirAt(unix.AT_FDCWD, dir, dir)
}

// lockDirAt is lockDir of name relative to dirfd; dir names it in errors.
func lockDirAt(dirfd int, name, dir string) (int, error) {
	fd, err := openAt(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return -1, err
	}
	if err := retryEINTR(func() error { return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) }); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			return -1, ErrGroupBusy
		}
		return -1, fmt.Errorf("locking %s: %w", dir, err)
	}
	return fd, nil
}

// lockDirs locks every existing directory of dirs (missing ones are
// skipped); on error it releases what it took.
func lockDirs(dirs []string) ([]int, error) {
	fds := make([]int, 0, len(dirs))
	for _, d := range dirs {
		fd, err := lockDir(d)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			unlockDirs(fds)
			return nil, err
		}
		fds = append(fds, fd)
	}
	return fds, nil
}

func unlockDirs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
