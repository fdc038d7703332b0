package nsjail

import (
	"context"
	"os"
	"sync"
	"syscall"
	"time"

	"agentjail/cgroup"
	"agentjail/seccomp"
)

// supervise runs the program that the flow's startProgram started, to
// its end: with the filter's listener, it takes the exec's time
// (awaitExec), answers the
// forbidden calls, captures the output, enforces the wall clock, the CPU
// time and (on cgroup v1) the OOM kill, and ends the jail when the caller
// cancels. It returns once every process of the jail is gone, with the
// result read from the kernel.
func (j *jail) supervise(ctx context.Context, pio *programIO, listener int) (*Result, error) {
	l := j.spec.Limits
	violations, stopSupervising, start, err := j.superviseProgram(listener)
	if err != nil {
		return nil, err
	}
	defer stopSupervising(0) // a panic's way out; the end below waits for it
	// After the supervisor took the listener: it closes it on a panic.
	if afterExecHook != nil {
		afterExecHook()
	}

	// From here on every path waits for the jail to end. The wall clock
	// runs from the exec, as the jail measured it: a busy daemon that read
	// msgExec late gives the program no extra time.
	p := pipes{pio.out, pio.err, pio.report}
	wd := j.watch(ctx, watchLimits{outputBytes: l.OutputBytes, wall: l.WallTime - time.Since(start), cpu: l.CPUTime, cpus: l.CPUs}, p, j.kill)
	j.watchJail(&wd.watchers, wd.done)

	werr := j.wait()
	end := time.Now()
	wd.halt()
	if werr != nil {
		return nil, stageErr("wait", werr)
	}
	stats, err := j.cg.Stats()
	if err != nil {
		return nil, stageErr("read cgroup", err)
	}
	j.lightTeardown = lightTeardown(stats.PeakMemoryBytes, j.spec)
	wd.drain(time.Second, p)
	stopSupervising(time.Second)

	res := j.newResult(j.spec.ID, wd.out, wd.report, end.Sub(start), stats, violations)
	if res.PidsPeak >= initTasks {
		res.PidsPeak -= initTasks // the jail's init is not the program's
	}
	if j.workspace != nil {
		// Every process of the jail is gone: nothing writes any more, and
		// Collect follows no link the program may have left.
		res.Files = Collect(j.workspace, j.spec.Collect, j.spec.CollectLimits)
	}
	ws, ok := j.programEnd()
	if err := j.guard.failure(j, ok); err != nil {
		return nil, err
	}
	res.decide(ws, j.killReason())
	return res, nil
}

// programEnd is how the program ended, once pid 1 has: its own status
// when pid 1 (a warm run's: the zygote) sent it (ok); else the flow's
// pid 1's status of a jail killed as a whole (killedStatus).
func (j *jail) programEnd() (ws syscall.WaitStatus, ok bool) {
	if ws, ok = j.programStatus(); ok {
		return ws, true
	}
	return killedStatus(j.initState()), false
}

// killedStatus is the program's wait status when pid 1 sent none (the
// jail was killed as a whole): pid 1's own end, st, when it is known (a
// cold jail's); else SIGKILL (a warm run's pid 1 ends as its program
// does; a cold jail whose wait failed has no status, and a session goes
// on to its clean-up then, and must not read a status that is not there).
func killedStatus(st *os.ProcessState) syscall.WaitStatus {
	if st == nil {
		return syscall.WaitStatus(syscall.SIGKILL)
	}
	return st.Sys().(syscall.WaitStatus)
}

// superviseProgram waits for the program's exec (awaitExec: the exec's
// time) and answers its forbidden calls on listener from then on
// (superviseSeccomp): a run's and a session's first step once the
// program has its filter.
func (j *jail) superviseProgram(listener int) (violations *seccomp.Collector, stop func(grace time.Duration), start time.Time, err error) {
	start, err = j.awaitExec(listener)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	violations, stop = j.superviseSeccomp(listener)
	return violations, stop, start, nil
}

// superviseSeccomp answers the forbidden system calls the filter's
// listener reports, counting each in violations, until stop: in kill mode,
// and for a call of a foreign ABI or past seccomp.MaxNotifications, it
// ends the jail before the call is answered. stop returns once the
// supervisor has: it ends by itself when the filter's last process has
// been reaped, and stop gives it grace for that before it cancels it (a
// kernel that never says so). Only the first call of stop counts.
func (j *jail) superviseSeccomp(listener int) (violations *seccomp.Collector, stop func(grace time.Duration)) {
	violations = &seccomp.Collector{}
	supervised := make(chan struct{})
	supCtx, cancel := context.WithCancel(context.Background())
	mode := j.spec.OnForbiddenSyscall
	go func() {
		defer close(supervised)
		_ = seccomp.Supervise(supCtx, listener, mode, violations, func(v seccomp.Violation) {
			// Kill mode, a foreign-ABI call (never allowed) and a call
			// past seccomp.MaxNotifications (the daemon's work for a jail
			// is bounded) end the jail, before the call is answered: the
			// kill reaches pid 1 at once, the program (another process)
			// only as pid 1's end kills the namespace, which
			// awaitExitFor waits for. Bounded: the kernel's kill does
			// not wait for the program. (pid 1 is not reaped before this
			// returns: the supervisor's end is waited for after.)
			if mode == seccomp.ModeKill || v.Foreign || v.OverBudget {
				j.kill(KillSeccomp)
				j.pid1.awaitKilled(time.Second)
			}
		})
	}()
	var once sync.Once
	return violations, func(grace time.Duration) {
		once.Do(func() {
			select {
			case <-supervised:
			case <-time.After(grace):
			}
			cancel()
			<-supervised
		})
	}
}

// newResult is the result of a run (or a session's call) named id from
// its output, its report channel (nil: none), its wall time, the
// cgroup's figures and the forbidden calls (nil: the caller's own):
// everything but how it ended (decide) and its files.
func (j *jail) newResult(id string, out, report *capture, wall time.Duration, stats cgroup.Stats, violations *seccomp.Collector) *Result {
	res := &Result{
		ID:               id,
		Stdout:           out.buf[0],
		Stderr:           out.buf[1],
		StdoutTruncated:  out.truncated[0],
		StderrTruncated:  out.truncated[1],
		WallTime:         wall,
		CPUTime:          stats.CPUTime,
		PeakMemoryBytes:  stats.PeakMemoryBytes,
		PeakMemorySource: stats.PeakMemorySource,
		MemoryLimitBytes: j.spec.Limits.MemoryBytes,
		OOMKills:         stats.OOMKills,
		PidsPeak:         stats.PidsPeak,
		PidsMaxHits:      stats.PidsMaxHits,
		CgroupVersion:    string(j.runner.Cgroups.Version()),
		HostUID:          j.uid,
	}
	if violations != nil {
		res.Seccomp = violations.Report()
	}
	if report != nil {
		res.Report, res.ReportTruncated = report.buf[0], report.truncated[0]
	}
	return res
}

// initState is pid 1's own end, when it is known and says something of
// the program (pid1.state); nil for a jail not started.
func (j *jail) initState() *os.ProcessState {
	if j.pid1 == nil {
		return nil
	}
	return j.pid1.state()
}
