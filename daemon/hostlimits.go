package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// What the configured maxima may take of the host's process ids, against
// kernel.pid_max and the daemon's pids limit (a service's TasksMax=).
// `agentjail check` and `agentjail serve` warn with PidsWarning.

// pidsShare is the share of the host's pids the jails may reach together
// without a warning: the rest is the host's own.
const pidsShare = 0.75

// MaxJailTasks is the most processes and threads the jails may hold at
// once under c's maxima: every running jail and every session at
// limits.max.pids, each with its init, and each process waiting ahead of
// a request (a prepared jail, a zygote, a warm run forked ahead) with its
// init.
func (c *Config) MaxJailTasks() int64 {
	perJail := c.maxLimits().Pids + 1
	jails := int64(c.Admission.MaxConcurrent) + int64(max(c.Admission.MaxSessions, 0))
	waiting := int64(c.Prepared()) + int64(len(c.Environments))*(1+int64(c.WarmAhead()))
	return jails*perJail + 2*waiting
}

// PidsWarning says, when it is so, that the jails under c's maxima could
// take more than pidsShare of the host's pids (pidMax: the smaller of
// kernel.pid_max and kernel.threads-max) while nothing bounds them below
// that: tasksMax is the daemon's pids limit (its cgroup's pids.max, a
// service's TasksMax=), 0 for none. "" when nothing needs saying.
func PidsWarning(c *Config, pidMax, tasksMax int64) string {
	if pidMax <= 0 {
		return ""
	}
	room := int64(float64(pidMax) * pidsShare)
	worst := c.MaxJailTasks()
	if worst <= room || tasksMax > 0 && tasksMax <= room {
		return ""
	}
	bound := "the daemon has no pids limit (no TasksMax= of a service, no pids.max of its cgroup)"
	if tasksMax > 0 {
		bound = fmt.Sprintf("the daemon's pids limit (TasksMax=, pids.max) is %d", tasksMax)
	}
	return fmt.Sprintf("admission.max_concurrent (%d) + admission.max_sessions (%d) jails of limits.max.pids (%d) each, and the processes kept ahead, may hold %d processes and threads: "+
		"more than %d%% of this host's %d pids (kernel.pid_max, kernel.threads-max), and %s; a few jails at their maximum could leave the host unable to fork. "+
		"Set TasksMax= on the service to at most %d (the shipped agentjail.service sets 25%%), or lower limits.max.pids or admission.max_sessions",
		c.Admission.MaxConcurrent, c.Admission.MaxSessions, c.maxLimits().Pids, worst, int(pidsShare*100), pidMax, bound, room)
}

// HostPidMax is the smaller of kernel.pid_max and kernel.threads-max, 0
// when neither can be read.
func HostPidMax() int64 {
	var m int64
	for _, p := range []string{"/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"} {
		if v, err := readInt(p); err == nil && v > 0 && (m == 0 || v < m) {
			m = v
		}
	}
	return m
}

// OwnPidsLimit is the smallest pids.max of this process's cgroup and the
// ones above it (a service's TasksMax= is its cgroup's pids.max), 0 when
// none is set or none can be read.
func OwnPidsLimit() int64 {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	return pidsLimitOf(string(b), "/sys/fs/cgroup")
}

// pidsLimitOf is OwnPidsLimit for a /proc/PID/cgroup text and a cgroup
// mount root: the pids hierarchy of v1 ("N:pids:/path") or, without one,
// the unified one ("0::/path").
func pidsLimitOf(procCgroup, root string) int64 {
	dir := ""
	for _, l := range strings.Split(procCgroup, "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[1] == "pids" || strings.Contains(","+f[1]+",", ",pids,"):
			dir = filepath.Join(root, f[1], f[2])
		case f[0] == "0" && f[1] == "" && dir == "":
			dir = filepath.Join(root, f[2])
		}
	}
	var limit int64
	for d := dir; d != "" && strings.HasPrefix(d, root); d = filepath.Dir(d) {
		if v, err := readInt(filepath.Join(d, "pids.max")); err == nil && v > 0 && (limit == 0 || v < limit) {
			limit = v
		}
		if d == root {
			break
		}
	}
	return limit
}

// readInt reads a file holding one integer ("max" is an error).
func readInt(p string) (int64, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}
