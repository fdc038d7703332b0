package main

import (
	"fmt"
	"log/slog"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"agentjail/daemon"
)

// The host checks of `agentjail check` that also bear on the
// configuration or on hosts other than Debian's: the architecture,
// Ubuntu's AppArmor restriction of user namespaces, and the host's pids.

// archCheck: the seccomp policy is x86_64's (docs/design.md); on any
// other architecture every system call would be a foreign one.
func archCheck(goarch string) checkItem {
	if goarch == "amd64" {
		return checkItem{Name: "architecture", OK: true, Detail: "x86_64"}
	}
	return checkItem{Name: "architecture", Detail: goarch + ": not supported; the jail's seccomp policy is written for x86_64's system calls, and refuses every call of another architecture",
		Fix: "run agentjail on an x86_64 host"}
}

// apparmorUsernsSysctl restricts unprivileged user namespaces on Ubuntu
// 23.10 and later (1 by default there).
const apparmorUsernsSysctl = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"

// apparmorCheck says what the sysctl's value (content of the file, ""
// when it does not exist) means for agentjail. A jail's bootstrap becomes
// the jail's unprivileged host uid before it makes the jail's user
// namespace, so the restriction applies to it: its namespace gets no
// capabilities, and the jail's set-up (mounts, network) fails. Whether a
// profile lets it through is for the trial run to tell: trialOK is its
// result (false when it did not run).
func apparmorCheck(value string, trialOK bool) (item checkItem, present bool) {
	v := strings.TrimSpace(value)
	item = checkItem{Name: "apparmor userns", OK: true}
	switch {
	case v == "":
		item.Detail = "kernel.apparmor_restrict_unprivileged_userns absent: user namespaces are not restricted by AppArmor"
		return item, false
	case v == "0":
		item.Detail = "kernel.apparmor_restrict_unprivileged_userns = 0: not restricted"
	case trialOK:
		item.Detail = "kernel.apparmor_restrict_unprivileged_userns = " + v + ", but the trial jail ran: a profile lets agentjail's user namespaces through"
	default:
		item.OK = false
		item.Detail = "kernel.apparmor_restrict_unprivileged_userns = " + v + " (Ubuntu 23.10+): a jail makes its user namespace as its own unprivileged uid, which AppArmor then confines without capabilities, and the jail's set-up fails"
		item.Fix = "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, and the same in /etc/sysctl.d/60-agentjail.conf (docs/hosts.md, \"Supported hosts\")"
	}
	return item, true
}

// addApparmorCheck adds the AppArmor line to rep, after its trial run
// (which may not have run: then its result is false).
func addApparmorCheck(rep *checkReport) {
	trialOK := false
	for _, c := range rep.Checks {
		if c.Name == "trial run" {
			trialOK = c.OK
		}
	}
	item, present := apparmorCheck(readString(apparmorUsernsSysctl), trialOK)
	if !present {
		return
	}
	rep.Checks = append(rep.Checks, item)
	rep.OK = rep.OK && item.OK
}

// pidsCheck is the line about the host's pids under cfg's maxima, with
// the pids limit the daemon would have: agentjail.service's TasksMax=
// when systemd has that unit loaded, else this process's own.
func pidsCheck(cfg *daemon.Config) checkItem {
	pidMax := daemon.HostPidMax()
	limit, from := serviceTasksMax()
	if from == "" {
		limit, from = daemon.OwnPidsLimit(), "this process's cgroup"
	}
	item := checkItem{Name: "host pids", OK: true,
		Detail: fmt.Sprintf("the jails may hold %d processes and threads; the host has %d pids; pids limit %s (%s)",
			cfg.MaxJailTasks(), pidMax, limitText(limit), from)}
	if w := daemon.PidsWarning(cfg, pidMax, limit); w != "" {
		// A warning, not a failure: a host may be sized for it.
		item.Detail = "warning: " + w
		item.Fix = "TasksMax= in agentjail.service (the shipped unit has TasksMax=25%), or smaller limits.max.pids, admission.max_sessions"
	}
	return item
}

func limitText(n int64) string {
	if n == 0 {
		return "none"
	}
	return strconv.FormatInt(n, 10)
}

// serviceTasksMax is agentjail.service's TasksMax= as systemd has it
// loaded (0 for infinity), and where that came from ("" when systemd or
// the unit is not there).
func serviceTasksMax() (int64, string) {
	if _, err := exec.LookPath("systemctl"); err != nil {
		return 0, ""
	}
	out, err := exec.Command("systemctl", "show", "--property=LoadState,TasksMax", "agentjail.service").Output()
	if err != nil || !strings.Contains(string(out), "LoadState=loaded") {
		return 0, ""
	}
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "TasksMax="); ok {
			n, _ := strconv.ParseInt(v, 10, 64) // "infinity": 0
			return n, "agentjail.service's TasksMax="
		}
	}
	return 0, ""
}

// warnHost logs, at the daemon's start, what `agentjail check` would
// warn about this host under cfg.
func warnHost(cfg *daemon.Config, log *slog.Logger) {
	for _, w := range hostWarnings(cfg, daemon.HostPidMax(), daemon.OwnPidsLimit(), runtime.GOARCH, readString(apparmorUsernsSysctl)) {
		log.Warn(w)
	}
}

// hostWarnings are warnHost's messages for a host with these pids (the
// smaller of pid_max and threads-max; the daemon's own pids limit, 0 for
// none), this architecture and this value of the AppArmor sysctl ("" when
// it does not exist).
func hostWarnings(cfg *daemon.Config, pidMax, ownLimit int64, goarch, apparmor string) []string {
	var ws []string
	if w := daemon.PidsWarning(cfg, pidMax, ownLimit); w != "" {
		ws = append(ws, w)
	}
	if a := archCheck(goarch); !a.OK {
		ws = append(ws, a.Detail)
	}
	// Before any jail has run: say what to change should they fail.
	if a, present := apparmorCheck(apparmor, false); present && !a.OK {
		ws = append(ws, a.Detail+" (if jails fail at set-up: "+a.Fix+")")
	}
	return ws
}
