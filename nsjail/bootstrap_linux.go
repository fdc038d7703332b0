//go:build linux

package nsjail

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"agentjail/nsjail/internal/wire"
)

// bootstrapBuilt is nil when this binary has the C stages (it imports
// agentjail/nsjail/boot, built with cgo), and otherwise says what to do.
func bootstrapBuilt() error {
	switch wire.Boot {
	case wire.BootLinked:
		return nil
	case wire.BootNoCgo:
		return ErrBuiltWithoutCgo
	default:
		return ErrNoBootstrap
	}
}

// bootstrap is the parent's side of bootstrap_linux.c's conversation,
// right after the start of proc (the bootstrap process, started with the
// jail's host uid in its environment): it returns the jail's pid 1, a
// child of this process. proc has been waited for when it returns,
// whatever the outcome.
//
// The pid the bootstrap reports names the jail's pid 1 only because that
// child is not reaped before FindProcess takes a pidfd of it: nothing in
// this process may wait for any child (wait(-1)) or set SIGCHLD to
// SIG_IGN (which reaps by itself), and the caller's OS thread stays
// locked, as the children's parent-death signal needs anyway.
//
// idMap, when not empty, is the jail's uid and gid map, which this process
// writes (the bootstrap was started with zygoteEnv): a zygote's
// namespace maps more ids than its own.
func bootstrap(sync io.ReadWriter, proc *os.Process, idMap string) (*os.Process, error) {
	reap := func(err error) (*os.Process, error) {
		_ = proc.Kill()
		_, _ = proc.Wait()
		return nil, err
	}
	if idMap != "" {
		if _, err := readRecord(sync, wire.RecUserns); err != nil {
			return reap(err)
		}
		if err := writeIDMaps(proc.Pid, idMap); err != nil {
			return reap(err)
		}
		if _, err := sync.Write([]byte{wire.Mapped}); err != nil {
			return reap(stageErr("bootstrap: send mapped", err))
		}
	}
	pid, err := readRecord(sync, wire.RecPID)
	if err == nil && pid <= 0 { // Kill would signal a process group
		err = &StageError{Stage: "bootstrap", Msg: fmt.Sprintf("pid %d", pid)}
	}
	if err != nil {
		// A deadline, or a bootstrap killed from outside, between its
		// clone and the record leaves a pid 1 nobody knows of.
		defer reapLostInit()
		return reap(err)
	}
	st, err := proc.Wait()
	if err == nil && !st.Success() {
		err = fmt.Errorf("bootstrap: %v", st)
	}
	// Our child (CLONE_PARENT) and not yet waited for: its pid is not
	// reused until we do, so the handle names it.
	init, ferr := os.FindProcess(int(pid))
	if err != nil || ferr != nil {
		if ferr == nil {
			_ = init.Kill()
			_, _ = init.Wait()
		}
		return nil, stageErr("bootstrap", errors.Join(err, ferr))
	}
	return init, nil
}

// bootstrapNested is bootstrap for a warm run's jail, whose bootstrap
// was started with nestEnv (bootstrap_linux.c): the jail's pid 1 reports
// itself, with its credentials (sync has SO_PASSCRED): its pid in this
// process's pid namespace. It is not this process's child but an orphan
// of its zygote's pid namespace, which reaps it: it returns a handle and
// a pidfd of it (taken while it waits for msgBuild: it is alive). proc
// has been waited for when it returns, whatever the outcome.
func bootstrapNested(sync *os.File, proc *os.Process) (*os.Process, *os.File, error) {
	_, _, pid, err := readRecordCreds(sync, wire.RecPID)
	if err == nil && pid <= 0 {
		err = &StageError{Stage: "bootstrap", Msg: fmt.Sprintf("pid %d in the credentials", pid)}
	}
	var pidfd *os.File
	if err == nil {
		fd, perr := unix.PidfdOpen(int(pid), unix.PIDFD_NONBLOCK)
		if perr != nil {
			err = stageErr("pidfd of the jail's init", perr)
		} else {
			pidfd = os.NewFile(uintptr(fd), "pidfd")
		}
	}
	var init *os.Process
	if err == nil {
		if init, err = os.FindProcess(int(pid)); err != nil {
			err = stageErr("bootstrap", err)
		}
	}
	if err != nil {
		_ = proc.Kill()
	}
	st, werr := proc.Wait()
	if werr != nil {
		_ = proc.Kill() // never left running, whatever the wait's trouble
	}
	if err == nil && (werr != nil || !st.Success()) {
		err = stageErr("bootstrap", errors.Join(werr, fmt.Errorf("%v", st)))
	}
	if err != nil {
		if pidfd != nil {
			_ = unix.PidfdSendSignal(int(pidfd.Fd()), unix.SIGKILL, nil, 0)
			pidfd.Close()
		}
		if init != nil {
			_ = init.Release()
		}
		return nil, nil, err
	}
	return init, pidfd, nil
}

// readRecordCreds reads the bootstrap's next record from a socket with
// SO_PASSCRED, which must be of one of the kinds want: its kind, its
// value and the pid, in this process's pid namespace, of the process that
// sent it.
func readRecordCreds(f *os.File, want ...byte) (kind byte, value, pid int32, err error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, 0, 0, stageErr("bootstrap", err)
	}
	var rec [recordSize]byte
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	for got := 0; got < len(rec); {
		var n, oobn int
		var rerr error
		if err := rc.Read(func(s uintptr) bool {
			n, oobn, _, _, rerr = unix.Recvmsg(int(s), rec[got:], oob, unix.MSG_CMSG_CLOEXEC)
			return rerr != unix.EAGAIN
		}); err != nil {
			return 0, 0, 0, stageErr("bootstrap", err)
		}
		if rerr != nil {
			return 0, 0, 0, stageErr("bootstrap", rerr)
		}
		if n == 0 {
			return 0, 0, 0, stageErr("bootstrap", io.ErrUnexpectedEOF)
		}
		if got == 0 && oobn > 0 {
			if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
				for i := range msgs {
					if c, perr := unix.ParseUnixCredentials(&msgs[i]); perr == nil {
						pid = c.Pid
					}
				}
			}
		}
		got += n
	}
	kind = rec[0]
	if kind == recError || !bytes.ContainsRune(want, rune(kind)) {
		_, err = readRecord(bytes.NewReader(rec[:]), want[0])
		return kind, 0, pid, err
	}
	return kind, int32(binary.NativeEndian.Uint32(rec[4:8])), pid, nil
}

// reapLostInit ends and waits for a jail pid 1 whose pid never arrived.
// It is a child of this OS thread (CLONE_PARENT), which the caller holds
// locked, in a pid namespace of its own: what tells it from any other
// child of the thread. /proc/thread-self/children needs a kernel built
// with CONFIG_PROC_CHILDREN (Debian's are); without it a lost pid 1 lives
// on until this thread ends (its parent-death signal).
func reapLostInit() {
	b, _ := os.ReadFile("/proc/thread-self/children")
	own, _ := os.Readlink("/proc/self/ns/pid")
	for _, f := range bytes.Fields(b) {
		pid, err := strconv.Atoi(string(f))
		if err != nil || pid <= 0 {
			continue
		}
		p, err := os.FindProcess(pid) // a pidfd: the pid cannot be reused while we hold it
		if err != nil {
			continue
		}
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid)); err == nil && ns != own {
			_ = p.Kill()
			_, _ = p.Wait()
		}
		_ = p.Release()
	}
}

// readRecord reads the bootstrap's next record, which must be of kind
// want, and returns its value.
func readRecord(r io.Reader, want byte) (int32, error) {
	var rec [recordSize]byte
	if _, err := io.ReadFull(r, rec[:]); err != nil {
		return 0, stageErr("bootstrap", err)
	}
	switch rec[0] {
	case want:
		return int32(binary.NativeEndian.Uint32(rec[4:8])), nil
	case recError:
		se := decodeRecord(rec[:])
		se.Stage = "bootstrap: " + se.Stage
		return 0, se
	default:
		return 0, &StageError{Stage: "bootstrap", Msg: fmt.Sprintf("record %q instead of %q", rec[0], want)}
	}
}

// writeIDMaps writes the uid and gid map of process pid's user namespace
// (the same for both: a jail's uid is its gid), after denying setgroups:
// the jail must never change its groups (dropping one could open a file
// that group is denied).
func writeIDMaps(pid int, m string) error {
	for _, w := range []struct{ file, data string }{{"setgroups", "deny"}, {"uid_map", m}, {"gid_map", m}} {
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/%s", pid, w.file), []byte(w.data), 0); err != nil {
			return stageErr("write "+w.file, err)
		}
	}
	return nil
}
