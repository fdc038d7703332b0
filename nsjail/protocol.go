package nsjail

import (
	"encoding/binary"
	"fmt"
	"io"
)

// The parent and the init stage talk over a socketpair that the init stage
// sees as fd 4 (syncFd). Every message is framed as
//
//	type (1 byte) | length (4 bytes, little endian) | payload
//
// and the conversation is always this one:
//
//	parent                                   init (pid 1 of the new namespaces)
//	  ---- msgPrepare (plan: preparePlan) -->
//	                                           the filter; unshare mount, net,
//	                                           ipc, uts; mounts, shared /code,
//	                                           pivot_root, hostname, lo up
//	  <--- msgReady + the jail's mount
//	       namespace (SCM_RIGHTS), or
//	       msgError ------------------------
//	  (a prepared jail may wait here for a
//	  request, see Runner.KeepPrepared)
//	  ---- msgConfig (plan: runPlan) + the
//	       program's stdin, stdout, stderr
//	       and report fds (SCM_RIGHTS) ------>
//	                                           fds onto 0, 1, 2, 3; the program in
//	                                           /code, / read-only, scratch size,
//	                                           /workspace files, rlimits
//	  cgroup v1: the jail's group made (for a
//	  prepared jail: ahead, and renamed to
//	  the request's ID now), its high-water
//	  mark reset, then at once, before
//	  msgReady:
//	  ---- msgGo + the group's `tasks` file
//	       of every hierarchy (SCM_RIGHTS) ->
//	  <--- msgReady, or msgError ------------
//	  cgroup v2, after msgReady: attach the
//	  init stage to the jail's group, reset
//	  its high-water mark
//	  ---- msgGo --------------------------->
//	                                           (read after msgReady is sent)
//	                                           on v1 move this thread into the
//	                                           group, unshare(CLONE_NEWCGROUP), drop every
//	                                           capability, mark fds close-on-exec,
//	                                           no_new_privs, seccomp, execve(python3)
//	  <--- msgSeccomp + the filter's listener
//	       fd, then the directory fd of
//	       /workspace when files are to be
//	       collected (SCM_RIGHTS) -----------
//	  supervise the listener: name every
//	  forbidden call, answer EPERM (or kill)
//	  <--- EOF (fd 4 is close-on-exec: the
//	       exec succeeded), or msgError -----
//
// Before it, the bootstrap (C that runs before the Go runtime starts, in
// bootstrap_linux.c) makes the user and pid namespaces and has the parent
// map the user: its own short exchange on the same socket. The init stage
// is C as well (init_linux.c): no Go runtime ever starts in a jail.
//
// msgPrepare and msgConfig carry plans (plan.go); msgError carries a
// StageError as JSON. The parent holds the jail's mount namespace until
// the run is over: python3's exit then does not unmount the jail's file
// system on the way to the parent's wait; jail.cleanup releases it on
// another thread, off the way to the run's answer. The init stage never
// waits for the parent without a message in flight, and it exits on any
// error (or when the parent's end closes), so a failing set-up cannot hang
// either side. Since on v1 msgGo is queued before msgReady is read, only an
// end of the socket before msgReady proves that the program never ran (a
// prepared jail's request is then retried in a jail of its own); a
// deadline passed with msgReady unread proves nothing.
const (
	reportFd = 3
	syncFd   = 4
	execFd   = 5 // the sealed binary (Runner.ExeFile), closed by the bootstrap once exec'd
)

const (
	msgConfig byte = iota + 1 // carries the program's stdio (and report) fds as SCM_RIGHTS
	msgReady
	msgGo
	msgError
	msgSeccomp // carries the seccomp listener fd as SCM_RIGHTS, no payload
	msgPrepare
)

// maxMsg bounds a message: the program, files and configuration.
const maxMsg = 256 << 20

// errTooLarge: a message whose length its 4 bytes (and the init stage's
// maxMsg) cannot hold is never sent. Cut, its payload's own bytes would be
// read as the next message or plan step: Spec.Validate's caps keep every
// request far below it.
var errTooLarge = fmt.Errorf("message larger than %d bytes", maxMsg)

func writeMsg(w io.Writer, typ byte, payload []byte) error {
	if len(payload) > maxMsg {
		return errTooLarge
	}
	var hdr [5]byte
	hdr[0] = typ
	binary.LittleEndian.PutUint32(hdr[1:], uint32(len(payload)))
	if len(payload) < 4096 {
		_, err := w.Write(append(hdr[:], payload...))
		return err
	}
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

// prepareConfig is what every jail of a Runner shares, known before any
// request: preparePlan turns it into msgPrepare's plan.
type prepareConfig struct {
	RootDir  string     // host directory the new root tmpfs is mounted on (in the jail's private mount namespace only)
	RootSize int64      // bytes of the root tmpfs: /etc, /code (read-only once the program is in)
	Binds    []string   // host directories bound read-only at the same path (always /usr)
	Links    []initLink // symlinks in the new root, e.g. /bin -> usr/bin
	TmpBytes int64      // scratch tmpfs for /workspace, /tmp, /dev/shm; runConfig may resize it
	Code     []File     // read-only files under /code that every run has (the daemon's harness)
	Seccomp  []byte     // the filter (seccomp.Program.MarshalBinary); always present
}

// runConfig is one request's part: runPlan turns it into msgConfig's
// plan, which goes with the program's stdio fds.
type runConfig struct {
	TmpBytes int64    // scratch tmpfs size; remounted when it differs from prepareConfig's
	Code     []File   // the rest of /code: the program and its own code files
	Files    []File   // written into /workspace
	Report   bool     // keep reportFd open across the exec
	Collect  bool     // send a directory fd of /workspace with the listener
	Argv     []string // argv of python3; Argv[0] is the path inside the jail
	Env      []string
	Rlimits  []initRlimit
}

type initLink struct{ Path, Target string }

type initRlimit struct {
	Resource int
	Cur, Max uint64
}
