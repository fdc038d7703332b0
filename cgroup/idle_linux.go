package cgroup

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// An idle group: a session's jail between its calls. Its processes may
// still be runnable (a thread a call left spinning), and a session holds
// no run slot between calls, so its CPU bandwidth is cut to a sliver
// then: IdleQuota per IdlePeriod, one percent of one CPU, so that idle
// sessions take at most admission.max_sessions percent of one CPU
// together. The
// cpu controller's bandwidth is used rather than the freezer: it is the
// controller the group already has (v1 and v2), its processes stay
// killable at once (a SIGKILL to a task frozen by the v1 freezer waits
// for a thaw, and a daemon that died would leave it frozen), and a
// change of bandwidth takes effect at once, both ways.
//
// The period is short on purpose. A killed task still runs until it has
// exited, and before Linux 6.18 a throttled one does that within its
// quota: with the kernel's longest period (1 s) a session killed while
// idle took seconds to end, and under emulation longer than the clean-up
// waits. So every path that kills a group lifts the cut first
// (unthrottle), and a task that dies without the daemon (its death
// signal) waits at most a period between slices.
const (
	IdleQuotaUS  = cpuMinQuotaUS // the kernel's smallest quota
	IdlePeriodUS = cpuPeriodUS   // the default period, 100 ms
)

// SetIdle cuts the group's CPU bandwidth to IdleQuotaUS per IdlePeriodUS
// (idle), or gives it back the bandwidth of its Resources. Without the
// cpu controller it is ErrNoController.
func (g *Group) SetIdle(idle bool) error {
	if !g.m.feat.cpu {
		return fmt.Errorf("group %s: cpu bandwidth: %w", g.name, ErrNoController)
	}
	l, err := g.res.limits()
	if err != nil {
		return err
	}
	quota, period := l.quotaUS, int64(cpuPeriodUS)
	if idle {
		quota, period = IdleQuotaUS, IdlePeriodUS
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.idle = idle
	if g.m.version == V2 {
		v := "max " + strconv.FormatInt(period, 10)
		if quota > 0 {
			v = strconv.FormatInt(quota, 10) + " " + strconv.FormatInt(period, 10)
		}
		if err := g.write(g.dirs[0], "cpu.max", []byte(v)); err != nil {
			return fmt.Errorf("group %s: writing cpu.max %s: %w", g.name, v, err)
		}
		return nil
	}
	if quota == 0 {
		quota = -1
	}
	dir := g.m.ctrlDir("cpu", g.name)
	set := [][2]string{{"cpu.cfs_period_us", strconv.FormatInt(period, 10)}, {"cpu.cfs_quota_us", strconv.FormatInt(quota, 10)}}
	if idle { // the quota first: the sliver holds from the first write
		set[0], set[1] = set[1], set[0]
	}
	for _, s := range set {
		if err := g.write(dir, s[0], []byte(s[1])); err != nil {
			return fmt.Errorf("group %s: writing %s %s: %w", g.name, s[0], s[1], err)
		}
	}
	return nil
}

// unthrottle lifts a cut of the named group's CPU bandwidth before its
// processes are killed, so that they exit at once (see IdlePeriodUS). A
// group without the cpu controller, or gone, is left as it is: there is
// nothing to lift.
func (m *Manager) unthrottle(name string) {
	if !m.feat.cpu {
		return
	}
	dir := m.ctrlDir("cpu", name)
	if m.version == V2 {
		_ = writeFile(filepath.Join(dir, "cpu.max"), []byte("max"))
		return
	}
	_ = writeFile(filepath.Join(dir, "cpu.cfs_quota_us"), []byte("-1"))
}
