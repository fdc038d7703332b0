package egress

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// ListenAddr is where a jail finds the proxy, inside its own network
// namespace.
const ListenAddr = "127.0.0.1:3128"

// ListenPort is ListenAddr's port.
const ListenPort = 3128

// ListenIn opens a TCP listener at 127.0.0.1:3128 inside the network
// namespace that netns (an open /proc/PID/ns/net) is. The socket is made
// on a locked OS thread that enters the namespace and comes back; a
// socket keeps the namespace it was made in, so the listener accepts the
// jail's connections while the daemon's goroutines serve them. The
// listener pins the namespace: close it when the run ends.
func ListenIn(netns *os.File) (net.Listener, error) {
	fd, err := socketIn(int(netns.Fd()))
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "egress-listener")
	l, err := net.FileListener(f) // dups the fd
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("egress listener: %w", err)
	}
	return l, nil
}

// socketIn makes the bound, listening socket in the namespace nsfd, on
// a goroutine of its own locked to its thread: should the way back to
// the daemon's namespace fail, the goroutine ends still locked and the
// runtime ends its thread with it, so no other goroutine ever runs in
// the jail's namespace.
func socketIn(nsfd int) (int, error) {
	type result struct {
		fd  int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		self, err := daemonNetns()
		if err != nil {
			ch <- result{-1, err}
			return
		}
		runtime.LockOSThread()
		if err := unix.Setns(nsfd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{-1, os.NewSyscallError("setns into the jail's network namespace", err)}
			return
		}
		fd, err := listenSocket()
		if berr := unix.Setns(self, unix.CLONE_NEWNET); berr != nil {
			if fd >= 0 {
				unix.Close(fd)
			}
			ch <- result{-1, os.NewSyscallError("setns back to the daemon's network namespace", berr)}
			return // still locked: the thread ends with this goroutine
		}
		runtime.UnlockOSThread()
		ch <- result{fd, err}
	}()
	r := <-ch
	return r.fd, r.err
}

// ownNetns is the daemon's network namespace, opened once: every thread
// of the daemon is in it (a thread that could not come back from a jail's
// is ended, never reused).
var ownNetns struct {
	once sync.Once
	fd   int
	err  error
}

func daemonNetns() (int, error) {
	ownNetns.once.Do(func() {
		ownNetns.fd, ownNetns.err = unix.Open("/proc/self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if ownNetns.err != nil {
			ownNetns.err = os.NewSyscallError("open /proc/self/ns/net", ownNetns.err)
		}
	})
	return ownNetns.fd, ownNetns.err
}

func listenSocket() (int, error) {
	// Blocking: os.NewFile in ListenIn would register a non-blocking
	// descriptor with the poller only to take it out again at its Close
	// (two epoll_ctl, some 3 µs of 40); net.FileListener makes its copy
	// non-blocking and registers that one.
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	// A connection the proxy closed first leaves TIME_WAIT behind.
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("setsockopt SO_REUSEADDR", err)
	}
	sa := &unix.SockaddrInet4{Port: ListenPort, Addr: [4]byte{127, 0, 0, 1}}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("bind "+ListenAddr+" in the jail's network namespace", err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("listen", err)
	}
	return fd, nil
}
