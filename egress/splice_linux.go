package egress

import (
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// spliceCopy moves bytes from src to dst with splice(2) through a pipe
// of its own, made here and closed on return: no descriptor outlives the
// copy. Each chunk waits in the pipe until charge (the byte cap and the
// counts) has said how much of it may go on; splice never moves more
// than m.room() bytes at once. ok is false, with nothing moved, when splice
// cannot be used here (a side that is not TCP, or a kernel that refuses):
// the caller copies instead. err is nil when src ended or m said stop.
func spliceCopy(dst, src net.Conn, m meter) (ok bool, err error) {
	sc, ok1 := src.(*net.TCPConn)
	dc, ok2 := dst.(*net.TCPConn)
	if !ok1 || !ok2 {
		return false, nil
	}
	src1, err := sc.SyscallConn()
	if err != nil {
		return false, nil
	}
	dst1, err := dc.SyscallConn()
	if err != nil {
		return false, nil
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return false, nil
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	_, _ = unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, spliceChunk) // a kernel that refuses keeps 64 KiB
	moved := false
	for {
		want := m.room()
		if want <= 0 {
			return true, nil
		}
		n, err := spliceIn(src1, p[1], want)
		if err != nil {
			if !moved && (errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS)) {
				return false, nil
			}
			return true, err
		}
		if n == 0 {
			return true, nil
		}
		moved = true
		k, cerr := m.take(n)
		put, err := spliceOut(dst1, p[0], k)
		m.put(k, put)
		if err != nil {
			return true, err
		}
		if cerr != nil {
			return true, cerr
		}
	}
}

// spliceIn moves up to n bytes from the socket into the pipe, waiting in
// the Go poller until the socket has some. 0 means the socket ended.
func spliceIn(rc syscall.RawConn, pipeW, n int) (int, error) {
	var got int64
	var serr error
	err := rc.Read(func(fd uintptr) bool {
		for {
			got, serr = unix.Splice(int(fd), nil, pipeW, nil, n, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
			if serr != unix.EINTR {
				return serr != unix.EAGAIN
			}
		}
	})
	if err == nil {
		err = serr
	}
	return int(got), err
}

// spliceOut moves n bytes from the pipe to the socket, waiting in the Go
// poller while the socket's buffer is full.
func spliceOut(rc syscall.RawConn, pipeR, n int) (int, error) {
	done := 0
	for done < n {
		var put int64
		var serr error
		err := rc.Write(func(fd uintptr) bool {
			for {
				put, serr = unix.Splice(pipeR, nil, int(fd), nil, n-done, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
				if serr != unix.EINTR {
					return serr != unix.EAGAIN
				}
			}
		})
		if err == nil {
			err = serr
		}
		if err != nil {
			return done, err
		}
		if put == 0 {
			return done, syscall.EPIPE
		}
		done += int(put)
	}
	return done, nil
}
