package daemon

import (
	"strings"
)

// sharedRlimitsMsg is the start-up warning of a daemon whose warm runs
// share per-user rlimits (nsjail.SharedUserRlimits): one that lacks
// CAP_SYS_RESOURCE, with a bound that is not unlimited. docs/operations.md
// lists it under Logs.
const sharedRlimitsMsg = "the warm runs of each environment share these per-user bounds of the daemon (each run has a smaller one of its own); " +
	"give the daemon CAP_SYS_RESOURCE or unlimited ones: under systemd the unit's lines in systemd (the shipped unit has them), " +
	"started by hand the command in shell, run in the shell that starts agentjail serve"

// rlimitFix is how one per-user rlimit is lifted: the systemd unit's
// directive, and bash's ulimit option.
var rlimitFix = map[string]struct{ systemd, ulimit string }{
	"RLIMIT_SIGPENDING": {"LimitSIGPENDING", "-i"},
	"RLIMIT_NPROC":      {"LimitNPROC", "-u"},
	"RLIMIT_MSGQUEUE":   {"LimitMSGQUEUE", "-q"},
	"RLIMIT_MEMLOCK":    {"LimitMEMLOCK", "-l"},
}

// sharedRlimitsFix says how to lift the shared bounds ("RLIMIT_NPROC=4096",
// as nsjail.SharedUserRlimits gives them): the systemd unit's lines, and
// the shell's command. A hard limit is raised only with CAP_SYS_RESOURCE,
// which the shell may lack too (a container): then they are set where it
// is started.
func sharedRlimitsFix(shared []string) (systemd, shell string) {
	var units, opts []string
	for _, s := range shared {
		name, _, _ := strings.Cut(s, "=")
		if f, ok := rlimitFix[name]; ok {
			units = append(units, f.systemd+"=infinity")
			opts = append(opts, f.ulimit+" unlimited")
		}
	}
	if len(units) == 0 {
		return "", ""
	}
	return strings.Join(units, " "),
		"ulimit " + strings.Join(opts, " ") + " (raising a hard limit needs CAP_SYS_RESOURCE in that shell too; in a container, set them when it is started, e.g. docker run --ulimit)"
}
