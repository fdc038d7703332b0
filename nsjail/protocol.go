package nsjail

import (
	"encoding/binary"
	"fmt"
	"io"

	"agentjail/nsjail/internal/wire"
)

// The parent and the init stage talk over a socketpair that the init stage
// sees as fd 4 (syncFd). Every message is framed as
//
//	type (1 byte) | length (4 bytes, little endian) | payload
//
// and the conversation is always this one:
//
//	parent                                   init (pid 1 of the new namespaces)
//	  ---- msgBuild (plan: buildPlan) ------>
//	                                           unshare mount, net, ipc, uts;
//	                                           mounts, shared /code,
//	                                           pivot_root, hostname, lo up;
//	                                           the filter decoded
//	  <--- msgReady + the jail's mount
//	       namespace (SCM_RIGHTS), or
//	       msgError ------------------------
//	  (a prepared jail waits here for its
//	  request, see Runner.KeepPrepared)
//	  ---- msgRequest (plan: requestPlan) +
//	       the program's stdin, stdout,
//	       stderr and report fds ---------->
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
//	                                           no_new_privs, seccomp
//	  <--- msgSeccomp + the filter's listener
//	       fd, then the directory fd of
//	       /workspace when files are to be
//	       collected (SCM_RIGHTS) -----------
//	  supervise the listener: name every
//	  forbidden call, answer EPERM (or kill)
//	                                           vfork; the child execs python3
//	  <--- msgExec (the exec's time,
//	       CLOCK_MONOTONIC ns), or msgError -
//	  the wall clock runs from that time
//	                                           the jail's init: reap every
//	                                           child, forward signals to the
//	                                           program
//	  <--- msgExit (the program's wait
//	       status) ----------------------------
//	                                           exit: the kernel kills whatever
//	                                           is left in the pid namespace
//	  wait for pid 1: the end of the last
//	  process of the jail
//
// Before it, the bootstrap (C that runs before the Go runtime starts, in
// bootstrap_linux.c) makes the user and pid namespaces and has the parent
// map the user: its own short exchange on the same socket. The init stage
// is C as well (init_linux.c): no Go runtime ever starts in a jail.
//
// msgBuild and msgRequest carry plans (plan.go); msgError carries one
// failure record (struct aj_record of bootstrap_linux.h, decodeRecord),
// the same record the bootstrap sends. The parent holds the jail's mount
// namespace until the run is over: the program's end then does not unmount
// the jail's file system on the way to the parent's wait; jail.cleanup
// releases it on another thread, off the way to the run's answer. The init
// stage never waits for the parent without a message in flight, and it
// exits on any error (or when the parent's end closes), so a failing
// set-up cannot hang either side. Since on v1 msgGo is queued before
// msgReady is read, only an end of the socket before msgReady proves that
// the program never ran (a prepared jail's request is then retried in a
// jail of its own); a deadline passed with msgReady unread proves nothing.
//
// A program that dies before pid 1 reports it (the jail killed as a whole:
// a limit, a cancel) has no msgExit: its end is pid 1's, SIGKILL.
const (
	reportFd = wire.ReportFD
	syncFd   = wire.SyncFD
	execFd   = 5           // the sealed binary (Runner.ExeFile), closed by the bootstrap once exec'd
	nestFd   = wire.NestFD // a warm run's bootstrap: a pidfd in its zygote's namespaces (bootstrap_linux.h's AJ_NEST_FD)
)

// msgType is the first byte of a message.
type msgType byte

const (
	msgBuild   msgType = wire.MsgBuild   // the build plan; no fds
	msgReady   msgType = wire.MsgReady   // the build (with the mount namespace's fd) or the request is carried out
	msgRequest msgType = wire.MsgRequest // the request plan, with the program's stdio (and report) fds
	msgGo      msgType = wire.MsgGo      // start the program (v1: with the group's tasks files)
	msgSeccomp msgType = wire.MsgSeccomp // the filter's listener fd (and /workspace's), no payload
	msgExec    msgType = wire.MsgExec    // the program was exec'd: int64 CLOCK_MONOTONIC ns, just before
	msgExit    msgType = wire.MsgExit    // the program ended: int32 wait status
	msgError   msgType = wire.MsgError   // a step failed: a failure record (decodeRecord)
	msgAdopt   msgType = wire.MsgAdopt   // a warm run's program is forked: its init watches it (fd: a pidfd of the program)
)

var msgNames = [...]string{msgBuild: "msgBuild", msgReady: "msgReady", msgRequest: "msgRequest", msgGo: "msgGo",
	msgSeccomp: "msgSeccomp", msgExec: "msgExec", msgExit: "msgExit", msgError: "msgError", msgAdopt: "msgAdopt"}

func (t msgType) String() string {
	if int(t) < len(msgNames) && msgNames[t] != "" {
		return msgNames[t]
	}
	return fmt.Sprintf("message type %d", byte(t))
}

// maxMsg bounds a message: the program, files and configuration.
const maxMsg = wire.MaxMsg

// errTooLarge: a message whose length its 4 bytes (and the init stage's
// maxMsg) cannot hold is never sent. Cut, its payload's own bytes would be
// read as the next message or plan step: Spec.Validate's caps keep every
// request far below it.
var errTooLarge = fmt.Errorf("message larger than %d bytes", maxMsg)

func writeMsg(w io.Writer, typ msgType, payload []byte) error {
	if len(payload) > maxMsg {
		return errTooLarge
	}
	var hdr [5]byte
	hdr[0] = byte(typ)
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
