package networld

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// InetSocket is one of a process's IPv4 or IPv6 sockets.
type InetSocket struct {
	Fd     int
	Inode  string // the fd's target, "socket:[INODE]"
	Type   string // "tcp", "udp", "raw"
	Listen bool
	Local  string // "IP:PORT"
	Peer   string // "" when not connected
}

func (s InetSocket) String() string {
	l := ""
	if s.Listen {
		l = " listening"
	}
	return fmt.Sprintf("fd %d %s %s%s peer %q", s.Fd, s.Type, s.Local, l, s.Peer)
}

// InetSockets lists the daemon's IPv4 and IPv6 sockets, whatever network
// namespace each was made in (a proxy listener lives in a jail's): each
// fd is copied with pidfd_getfd(2) and asked for its family, type and
// addresses, then closed.
func (d *Daemon) InetSockets() ([]InetSocket, error) {
	pidfd, err := unix.PidfdOpen(d.Pid, 0)
	if err != nil {
		return nil, fmt.Errorf("pidfd_open %d: %w", d.Pid, err)
	}
	defer unix.Close(pidfd)
	dir := fmt.Sprintf("/proc/%d/fd", d.Pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []InetSocket
	for _, e := range ents {
		target, _ := os.Readlink(filepath.Join(dir, e.Name()))
		if !strings.HasPrefix(target, "socket:") {
			continue
		}
		n, _ := strconv.Atoi(e.Name())
		fd, err := unix.PidfdGetfd(pidfd, n, 0)
		if err != nil {
			continue // closed meanwhile
		}
		s, ok := inspect(fd)
		unix.Close(fd)
		if ok {
			s.Fd, s.Inode = n, target
			out = append(out, s)
		}
	}
	return out, nil
}

func inspect(fd int) (InetSocket, bool) {
	dom, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil || (dom != unix.AF_INET && dom != unix.AF_INET6) {
		return InetSocket{}, false
	}
	var s InetSocket
	typ, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	s.Type = map[int]string{unix.SOCK_STREAM: "tcp", unix.SOCK_DGRAM: "udp", unix.SOCK_RAW: "raw"}[typ]
	acc, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
	s.Listen = acc == 1
	if sa, err := unix.Getsockname(fd); err == nil {
		s.Local = sockaddr(sa)
	}
	if sa, err := unix.Getpeername(fd); err == nil {
		s.Peer = sockaddr(sa)
	}
	return s, true
}

func sockaddr(sa unix.Sockaddr) string {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port)).String()
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port)).String()
	}
	return ""
}
