package nsjail

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"agentjail/cgroup"
)

// watchdog bounds one run, or one call of a session, while it runs: it
// captures the output (capped), and stops the work when it passes its
// wall time or its CPU time, when its output passes its cap, or when the
// caller cancels. A run is stopped by a kill of its jail; a session's
// call by an interrupt. Written once for both (supervise, Session.Call).
type watchdog struct {
	out    *capture // stdout (0) and stderr (1)
	report *capture // the report channel; nil when there is none

	done chan struct{} // closed by halt: the watchers stop
	wall *time.Timer
	// watchers read the jail's cgroup: none may outlive halt, after which
	// the caller may delete the group.
	watchers sync.WaitGroup
}

// watchLimits are what a watchdog enforces.
type watchLimits struct {
	outputBytes int64
	wall        time.Duration // from now
	// cpu is the CPU time the jail's processes may use past cpuBase (the
	// group's at a call's start; 0 for a run), at cpus of quota.
	cpuBase, cpu time.Duration
	cpus         float64
}

// pipes are this process's ends of the work's output: stdout, stderr and
// the report channel (nil: none).
type pipes struct{ out, err, report *os.File }

// watch starts a watchdog over the jail j for work with limits l and
// output p. stop is called with the reason of each limit passed
// (KillOutputLimit, KillWallTimeout, KillCPUTimeout), or of the caller's
// cancel (KillCancelled; KillShutdown when that is the context's cause);
// it may be called more than once (kill and interrupt keep the first
// reason). The caller calls halt once the work has ended.
func (j *jail) watch(ctx context.Context, l watchLimits, p pipes, stop func(KillReason)) *watchdog {
	w := &watchdog{done: make(chan struct{})}
	w.out = &capture{limit: l.outputBytes, onLimit: func() { stop(KillOutputLimit) }, tap: TapOf(ctx)}
	w.out.start(0, p.out)
	w.out.start(1, p.err)
	// The report channel is drained like stdout, capped on its own and
	// never a reason to stop: a harness past the cap just gets cut.
	if p.report != nil {
		w.report = &capture{limit: MaxReportBytes, onLimit: func() {}}
		w.report.start(0, p.report)
	}
	w.wall = time.AfterFunc(l.wall, func() { stop(KillWallTimeout) })
	w.watchers.Go(func() { j.watchCPU(l.cpuBase, l.cpu, l.cpus, w.done, func() { stop(KillCPUTimeout) }) })
	go func() {
		select {
		case <-ctx.Done():
			reason := KillCancelled
			if errors.Is(context.Cause(ctx), KillShutdown) {
				reason = KillShutdown
			}
			stop(reason)
		case <-w.done:
		}
	}()
	return w
}

// halt stops the watchdog's timer and watchers, and returns once none
// reads the jail's cgroup any more. The output is still being captured:
// wait for it (drain).
func (w *watchdog) halt() {
	w.wall.Stop()
	close(w.done)
	w.watchers.Wait()
}

// drain waits, at most tail, for the end of the output in p.
func (w *watchdog) drain(tail time.Duration, p pipes) {
	w.out.wait(tail, p.out, p.err)
	if w.report != nil {
		w.report.wait(tail, p.report)
	}
}

// watchJail watches, until done, what ends the jail as a whole whatever
// runs in it: on cgroup v1 the kernel's OOM kill (watchMemory), and its
// guard (a warm jail's zygote: runGuard.watch). Its watchers are counted
// in watchers. A run's watchdog and a session's life each start one.
func (j *jail) watchJail(watchers *sync.WaitGroup, done <-chan struct{}) {
	j.watchMemory(watchers, done)
	j.guard.watch(done)
}

// watchMemory ends the whole jail, on cgroup v1, once the kernel's OOM
// killer has killed a process of it (watchOOM), until done; v2 does that
// itself (memory.oom.group). The watcher is counted in watchers.
func (j *jail) watchMemory(watchers *sync.WaitGroup, done <-chan struct{}) {
	if j.runner.Cgroups.Version() != cgroup.V1 {
		return
	}
	if oom, err := j.cg.OOMEvents(); err == nil {
		watchers.Go(func() { j.watchOOM(oom, done) })
	}
}

// watchOOM ends the whole jail once the kernel's OOM killer has killed a
// process of it (cgroup v1). The event fires when the group enters OOM,
// before the killer acts; killing at once would beat the kernel, which then
// skips its kill, and "memory_limit" would rest on no OOM kill at all. So it
// waits for the kernel's counter to rise. If it does not (the group left OOM
// without a kill), nothing is killed: only the kernel's kill is evidence.
func (j *jail) watchOOM(oom <-chan struct{}, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case _, ok := <-oom:
			if !ok {
				return
			}
		}
		for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline); {
			if n, err := j.cg.OOMKills(); err != nil {
				return
			} else if n > 0 {
				j.kill(KillMemoryLimit)
				return
			}
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}
}

// watchCPU calls over, once, when the CPU time of all the jail's
// processes has passed base by limit (a run: base 0, and over kills the
// jail; a session's call: base is the group's CPU time at the call's
// start). It sleeps until the earliest moment the limit could be reached
// at the jail's CPU quota, so a short run costs no reads at all.
func (j *jail) watchCPU(base, limit time.Duration, cpus float64, done <-chan struct{}, over func()) {
	t := time.NewTimer(time.Duration(float64(limit) / cpus))
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		used, err := j.cg.CPUTime()
		if err != nil {
			return
		}
		if used -= base; used >= limit {
			over()
			return
		}
		wait := time.Duration(float64(limit-used) / cpus)
		t.Reset(max(wait, time.Millisecond))
	}
}
