package cgroup

import (
	"fmt"
	"strconv"
)

// An idle group: a session's jail between its calls. Its processes may
// still be runnable (a thread a call left spinning), and a session holds
// no run slot between calls, so its CPU bandwidth is cut to a sliver
// then: IdleQuota per IdlePeriod, a tenth of a percent of one CPU, which
// no number of idle sessions turns into a competitor of the runs. The
// cpu controller's bandwidth is used rather than the freezer: it is the
// controller the group already has (v1 and v2), its processes stay
// killable at once (a SIGKILL to a task frozen by the v1 freezer waits
// for a thaw, and a daemon that died would leave it frozen), and a
// change of bandwidth takes effect at once, both ways.
const (
	IdleQuotaUS  = cpuMinQuotaUS // the kernel's smallest quota
	IdlePeriodUS = 1000000       // the kernel's longest period
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
