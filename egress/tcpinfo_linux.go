package egress

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// kernelBytes is what the kernel says both sockets of c received so far
// (TCP_INFO's bytes_received): the idle watchdog's evidence that bytes
// moved while a download spliced a whole chunk without a look from here.
func (c *conn) kernelBytes() uint64 {
	c.mu.Lock()
	up := c.up
	c.mu.Unlock()
	return tcpReceived(c.client) + tcpReceived(up)
}

func tcpReceived(c net.Conn) uint64 {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	var n uint64
	_ = raw.Control(func(fd uintptr) {
		if info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			n = info.Bytes_received
		}
	})
	return n
}
