package nsjail

import (
	"fmt"

	"golang.org/x/sys/unix"

	"agentjail/nsjail/internal/wire"
)

// userRlimits are the per-user rlimits that the kernel also counts up the
// chain of user namespaces, with a jail's bounds (bootstrap_linux.h's
// AJ_RLIMIT_*): every jail's processes get them, and its namespace is made
// with them; a zygote's namespace with none, so that its runs share no
// bound and each run's own namespace holds the run's.
var userRlimits = []initRlimit{
	{unix.RLIMIT_SIGPENDING, wire.RlimitSigpending, wire.RlimitSigpending},
	{unix.RLIMIT_NPROC, wire.RlimitNproc, wire.RlimitNproc},
	{unix.RLIMIT_MSGQUEUE, wire.RlimitMsgqueue, wire.RlimitMsgqueue},
	{unix.RLIMIT_MEMLOCK, wire.RlimitMemlock, wire.RlimitMemlock},
}

// SharedUserRlimits says, for a Runner's zygotes, which per-user rlimits
// their runs share because this process can neither raise them
// (CAP_SYS_RESOURCE) nor has them unlimited: each is the daemon's bound
// that the runs of one environment share (bootstrap_linux.c). Empty: each
// run has its own bound of each.
func SharedUserRlimits() []string {
	var shared []string
	if hasCapability(unix.CAP_SYS_RESOURCE) {
		return nil
	}
	for _, r := range userRlimits {
		var rl unix.Rlimit
		if unix.Getrlimit(r.Resource, &rl) == nil && rl.Max != unix.RLIM_INFINITY {
			shared = append(shared, fmt.Sprintf("%s=%d", rlimitName[r.Resource], rl.Max))
		}
	}
	return shared
}

var rlimitName = map[int]string{unix.RLIMIT_SIGPENDING: "RLIMIT_SIGPENDING", unix.RLIMIT_NPROC: "RLIMIT_NPROC",
	unix.RLIMIT_MSGQUEUE: "RLIMIT_MSGQUEUE", unix.RLIMIT_MEMLOCK: "RLIMIT_MEMLOCK"}
