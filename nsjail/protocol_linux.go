package nsjail

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"agentjail/nsjail/internal/wire"
)

// maxMsgFds is the most fds one message of the init stage's conversation
// carries (stdin, stdout, stderr and the report channel; a v1 group's
// `tasks` files, one for each of the four hierarchies cgroup uses; a warm
// run's init's six namespaces). A message with more is refused whole,
// never cut (MSG_CTRUNC).
const maxMsgFds = wire.MaxMsgFDs

// recvMsg reads one message whose first bytes come from recv (a recvmsg),
// so that the fds passed with it (SCM_RIGHTS) are received rather than
// dropped by the kernel; the rest of the payload is read from r. The fds
// are close-on-exec. EOF before a header is io.EOF.
func recvMsg(r io.Reader, recv func(p, oob []byte) (n, oobn, flags int, err error)) (typ msgType, payload []byte, fds []int, err error) {
	typ, payload, fds, _, err = recvMsgCreds(r, recv)
	return typ, payload, fds, err
}

// recvMsgCreds is recvMsg that also returns the sender's pid in this
// process's pid namespace when the message carried its credentials
// (SCM_CREDENTIALS: the receiving socket has SO_PASSCRED), else 0.
func recvMsgCreds(r io.Reader, recv func(p, oob []byte) (n, oobn, flags int, err error)) (typ msgType, payload []byte, fds []int, pid int32, err error) {
	var hdr [5]byte
	oob := make([]byte, unix.CmsgSpace(maxMsgFds*4)+unix.CmsgSpace(unix.SizeofUcred))
	n, oobn, flags, err := recv(hdr[:], oob)
	if err != nil {
		return 0, nil, nil, 0, err
	}
	if oobn > 0 {
		if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
			for i := range msgs {
				if got, perr := unix.ParseUnixRights(&msgs[i]); perr == nil {
					fds = append(fds, got...)
				} else if c, perr := unix.ParseUnixCredentials(&msgs[i]); perr == nil {
					pid = c.Pid
				}
			}
		}
	}
	if flags&unix.MSG_CTRUNC != 0 || len(fds) > maxMsgFds { // past the buffer, the kernel closed them
		closeFds(fds)
		return 0, nil, nil, 0, fmt.Errorf("a message carried more than %d fds", maxMsgFds)
	}
	if n == 0 {
		return 0, nil, fds, pid, io.EOF
	}
	if n < len(hdr) { // the writer sends a header in one call
		if _, err := io.ReadFull(r, hdr[n:]); err != nil {
			return 0, nil, fds, pid, err
		}
	}
	size := binary.LittleEndian.Uint32(hdr[1:])
	if size > maxMsg {
		return 0, nil, fds, pid, fmt.Errorf("message of %d bytes is too large", size)
	}
	payload = make([]byte, size)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, fds, pid, err
	}
	return msgType(hdr[0]), payload, fds, pid, nil
}

// readMsgFds is recvMsg on the parent's non-blocking end, through the
// poller (its deadline applies).
func readMsgFds(f *os.File) (typ msgType, payload []byte, fds []int, err error) {
	typ, payload, fds, _, err = readMsgCreds(f)
	return typ, payload, fds, err
}

// readMsgCreds is readMsgFds with the sender's pid (recvMsgCreds).
func readMsgCreds(f *os.File) (typ msgType, payload []byte, fds []int, pid int32, err error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, nil, nil, 0, err
	}
	return recvMsgCreds(f, func(p, oob []byte) (n, oobn, flags int, err error) {
		var rerr error
		if err := rc.Read(func(s uintptr) bool {
			n, oobn, flags, _, rerr = unix.Recvmsg(int(s), p, oob, unix.MSG_CMSG_CLOEXEC)
			return rerr != unix.EAGAIN
		}); err != nil {
			return 0, 0, 0, err
		}
		return n, oobn, flags, rerr
	})
}

// sendMsgFds writes one message whose header carries fds (SCM_RIGHTS).
func sendMsgFds(f *os.File, typ msgType, payload []byte, fds []int) error {
	if len(payload) > maxMsg {
		return errTooLarge
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var hdr [5]byte
	hdr[0] = byte(typ)
	binary.LittleEndian.PutUint32(hdr[1:], uint32(len(payload)))
	var serr error
	if err := rc.Write(func(s uintptr) bool {
		serr = unix.Sendmsg(int(s), hdr[:], unix.UnixRights(fds...), nil, unix.MSG_NOSIGNAL)
		return serr != unix.EAGAIN
	}); err != nil {
		return err
	}
	if serr != nil || len(payload) == 0 {
		// No write of nothing: it would still reach the socket, and
		// fail (EPIPE) once the init stage, having its message, exec'd.
		return serr
	}
	_, err = f.Write(payload)
	return err
}
