package nsjail

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The session program's records on the control socket (session_linux.go
// has the protocol). The program sends "ready" once, then one record for
// each call, its end; between calls nothing. The daemon reads no more:
// a call reads one record, and a record that is not the call's end (one
// left from before, another call's, one that is not a record at all) ends
// the session with EndProtocol. So what the program sends costs the
// daemon one read and one small parse per call, however much it sends
// (a loop of records on fd 3 cost it 50 times the call's CPU), and the
// read's buffer is one of a pool, not 256 KiB made for each record.

// sessionRecord is one message of the session's program.
type sessionRecord struct {
	T      string `json:"t"`
	N      int    `json:"n"`
	Status int32  `json:"status"`
}

// waitStatus is the end record's status as a wait status: an exit with
// its code, or death by SIGINT (an uncaught KeyboardInterrupt, as python
// ends); anything else the program claims is an exit with code 1.
func (r *sessionRecord) waitStatus() syscall.WaitStatus {
	ws := syscall.WaitStatus(r.Status)
	if ws.Exited() || ws == syscall.WaitStatus(syscall.SIGINT) {
		return ws
	}
	return syscall.WaitStatus(1 << 8)
}

// maxRecord bounds one message of the program (the harness caps a value
// far below it); a longer one is cut by the kernel, and is no record.
const maxRecord = 256 << 10

// recordBufs are the buffers records are read into: one for each read
// under way, not one for each record.
var recordBufs = sync.Pool{New: func() any { b := make([]byte, maxRecord); return &b }}

// errBadRecord is a message that is not a record: too long, carrying
// fds, or not a JSON object of a record.
var errBadRecord = errors.New("a message on the control socket that is not a record")

// readRecord reads the program's next message: one JSON object, and a
// copy of its bytes. io.EOF when every end of the socket in the jail is
// closed; errBadRecord for a message that is no record. A message that
// carries fds has them closed by the kernel (no room is given for them),
// and is no record.
func (s *Session) readRecord() (*sessionRecord, []byte, error) {
	rc, err := s.ctl.SyscallConn()
	if err != nil {
		return nil, nil, err
	}
	bp := recordBufs.Get().(*[]byte)
	defer recordBufs.Put(bp)
	buf := *bp
	var n, flags int
	var rerr error
	if err := rc.Read(func(fd uintptr) bool {
		n, _, flags, _, rerr = unix.Recvmsg(int(fd), buf, nil, unix.MSG_CMSG_CLOEXEC)
		return rerr != unix.EAGAIN
	}); err != nil {
		return nil, nil, err
	}
	switch {
	case rerr != nil:
		return nil, nil, rerr
	case n == 0:
		return nil, nil, io.EOF
	case flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0:
		return nil, nil, errBadRecord // too long, or with fds (the kernel closed them)
	}
	var rec sessionRecord
	if json.Unmarshal(buf[:n], &rec) != nil {
		return nil, nil, errBadRecord
	}
	return &rec, bytes.Clone(buf[:n]), nil
}

// awaitEnd reads call n's end, the one record a call may send; nil when
// the channel ended first (the session's end, or a program that closed
// it), or when the program sent something else: then the session is
// ended (EndProtocol).
func (s *Session) awaitEnd(n int) (*sessionRecord, []byte) {
	rec, raw, err := s.readRecord()
	switch {
	case errors.Is(err, errBadRecord), err == nil && (rec.T != "end" || rec.N != n):
		s.End(EndProtocol)
		return nil, nil
	case err != nil:
		return nil, nil
	}
	return rec, raw
}
