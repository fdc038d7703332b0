//go:build linux && cgo

package boot

// #cgo CFLAGS: -Wall -Wextra -Werror -O2
// #cgo LDFLAGS: -Wl,--wrap=pthread_create
// #include <stdlib.h>
// #include "bootstrap_linux.h"
import "C"

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"agentjail/nsjail/internal/wire"
)

// SlackOfAThreadMadeBy is the timer slack, in nanoseconds, of a thread
// that a thread with creatorSlack makes through pthread_create (-1: none
// could be made), and the main thread's slack as slack_linux.c read it.
// For TestThreadsSysmonMakesDoNotInheritItsSlack.
func SlackOfAThreadMadeBy(creatorSlack int) (made, main int) {
	var m C.long
	made = int(C.aj_slack_of_a_thread_made_by(C.ulong(creatorSlack), &m))
	return made, int(m)
}

// bootstrap_linux.c and the init stage (init_*_linux.c) must agree with wire (and so with
// nsjail's protocol.go, bootstrap_linux.go and plan.go): each index below is 0 when both sides
// agree, and out of range (it does not compile) otherwise.
var (
	_ = [1]int{}[C.AJ_SYNC_FD-wire.SyncFD]
	_ = [1]int{}[C.AJ_REPORT_FD-wire.ReportFD]
	_ = [1]int{}[C.AJ_JAIL_ID-wire.JailID]
	_ = [1]int{}[C.AJ_MAX_MSG-wire.MaxMsg]
	_ = [1]int{}[C.AJ_MAX_FDS-wire.MaxMsgFDs]
	_ = [1]int{}[C.AJ_MSG_BUILD-wire.MsgBuild]
	_ = [1]int{}[C.AJ_MSG_READY-wire.MsgReady]
	_ = [1]int{}[C.AJ_MSG_REQUEST-wire.MsgRequest]
	_ = [1]int{}[C.AJ_MSG_GO-wire.MsgGo]
	_ = [1]int{}[C.AJ_MSG_SECCOMP-wire.MsgSeccomp]
	_ = [1]int{}[C.AJ_MSG_EXEC-wire.MsgExec]
	_ = [1]int{}[C.AJ_MSG_EXIT-wire.MsgExit]
	_ = [1]int{}[C.AJ_MSG_ERROR-wire.MsgError]
	_ = [1]int{}[C.AJ_MSG_ADOPT-wire.MsgAdopt]
	_ = [1]int{}[C.AJ_NEST_FD-wire.NestFD]
	_ = [1]int{}[C.AJ_RECORD_SIZE-wire.RecordSize]
	_ = [1]int{}[C.AJ_SYSMON_SLACK_NS-wire.SysmonSlackNS]
	_ = [1]int{}[C.AJ_REC_ERROR-int(wire.RecError)]
	_ = [1]int{}[C.AJ_OP_UNSHARE-wire.OpUnshare]
	_ = [1]int{}[C.AJ_OP_MOUNT-wire.OpMount]
	_ = [1]int{}[C.AJ_OP_BIND_RO-wire.OpBindRO]
	_ = [1]int{}[C.AJ_OP_MKDIR-wire.OpMkdir]
	_ = [1]int{}[C.AJ_OP_SYMLINK-wire.OpSymlink]
	_ = [1]int{}[C.AJ_OP_WRITE-wire.OpWrite]
	_ = [1]int{}[C.AJ_OP_CHMOD-wire.OpChmod]
	_ = [1]int{}[C.AJ_OP_IF_EXISTS-wire.OpIfExists]
	_ = [1]int{}[C.AJ_OP_UMOUNT-wire.OpUmount]
	_ = [1]int{}[C.AJ_OP_RMDIR-wire.OpRmdir]
	_ = [1]int{}[C.AJ_OP_PIVOT_ROOT-wire.OpPivotRoot]
	_ = [1]int{}[C.AJ_OP_HOSTNAME-wire.OpHostname]
	_ = [1]int{}[C.AJ_OP_DOMAINNAME-wire.OpDomainname]
	_ = [1]int{}[C.AJ_OP_LOOPBACK_UP-wire.OpLoopbackUp]
	_ = [1]int{}[C.AJ_OP_CHDIR-wire.OpChdir]
	_ = [1]int{}[C.AJ_OP_SECCOMP-wire.OpSeccomp]
	_ = [1]int{}[C.AJ_OP_STDIO-wire.OpStdio]
	_ = [1]int{}[C.AJ_OP_RLIMIT-wire.OpRlimit]
	_ = [1]int{}[C.AJ_OP_EXEC-wire.OpExec]
	_ = [1]int{}[C.AJ_OP_KEEP_CAPS-wire.OpKeepCaps]
	_ = [1]int{}[C.AJ_OP_ADOPT-wire.OpAdopt]
	_ = [1]int{}[C.AJ_OP_ATTACH-wire.OpAttach]
	_ = [1]int{}[C.AJ_OP_SETATTR-wire.OpSetattr]
	_ = [1]int{}[C.AJ_OP_LAST-wire.OpLast]
	_ = [1]int{}[C.AJ_RLIMIT_SIGPENDING-wire.RlimitSigpending]
	_ = [1]int{}[C.AJ_RLIMIT_NPROC-wire.RlimitNproc]
	_ = [1]int{}[C.AJ_RLIMIT_MSGQUEUE-wire.RlimitMsgqueue]
	_ = [1]int{}[C.AJ_RLIMIT_MEMLOCK-wire.RlimitMemlock]
	_ = [1]int{}[int(C.AJ_REC_USERNS)-int(wire.RecUserns)]
	_ = [1]int{}[int(C.AJ_REC_PID)-int(wire.RecPID)]
	_ = [1]int{}[int(C.AJ_MAPPED)-int(wire.Mapped)]
)

// This binary has the C stages.
func init() {
	wire.Boot = wire.BootLinked
}

// Arg0 is the argv[0] the C bootstrap acts on (for a test: it must be
// wire.InitArg0).
const Arg0 = C.AJ_INIT_ARG0

// bootstrap_linux.h's strings must be wire's (no compile-time check for
// strings: the start of any binary that imports this package says so).
func init() {
	if C.AJ_UID_ENV != wire.UIDEnv || C.AJ_ZYGOTE_ENV != wire.ZygoteEnv || C.AJ_NEST_ENV != wire.NestEnv || C.AJ_INIT_ARG0 != wire.InitArg0 {
		panic("nsjail/boot: bootstrap_linux.h's AJ_INIT_ARG0, AJ_UID_ENV, AJ_ZYGOTE_ENV or AJ_NEST_ENV differs from wire")
	}
}

// WriteBeneath writes content to rel below the directory dir as the init
// stage writes /etc, /code and the request's files (init_fs_linux.c's
// aj_write_beneath), for its test.
func WriteBeneath(dir, rel string, content []byte, mode uint32) error {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	crel := C.CString(rel)
	defer C.free(unsafe.Pointer(crel))
	var ccontent *C.char
	if len(content) > 0 {
		ccontent = (*C.char)(C.CBytes(content))
		defer C.free(unsafe.Pointer(ccontent))
	}
	if r, err := C.aj_write_beneath(C.int(fd), crel, ccontent, C.size_t(len(content)), C.uint(mode)); r != 0 {
		return err
	}
	return nil
}

// PlanCheck is init_plan_linux.c's dry pass over a plan (aj_plan_check), for
// the fuzz test: it tells whether the init stage would carry the plan out
// rather than refuse it as malformed.
func PlanCheck(plan []byte, nfds int) bool {
	var p *C.char
	if len(plan) > 0 {
		p = (*C.char)(C.CBytes(plan))
		defer C.free(unsafe.Pointer(p))
	}
	return C.aj_plan_check(p, C.uint32_t(len(plan)), C.int(nfds)) == 0
}
