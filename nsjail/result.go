package nsjail

import (
	"syscall"
	"time"

	"agentjail/seccomp"
)

// Status is how the program ended (docs/contract.md §3).
type Status string

const (
	StatusOK       Status = "ok"       // exit 0, not killed
	StatusError    Status = "error"    // non-zero exit
	StatusSignaled Status = "signaled" // died by a signal that no limit sent
	StatusKilled   Status = "killed"   // a limit or the daemon ended it; KillReason says which
)

// KillReason says which limit or which daemon decision ended a jail. Each is
// decided from evidence the kernel or this process holds, never from an
// exit code alone.
type KillReason string

const (
	KillNone          KillReason = ""
	KillMemoryLimit   KillReason = "memory_limit"    // the cgroup's OOM-kill counter rose
	KillWallTimeout   KillReason = "wall_timeout"    // our wall-clock timer fired
	KillCPUTimeout    KillReason = "cpu_timeout"     // cgroup CPU time passed the limit
	KillOutputLimit   KillReason = "output_limit"    // stdout+stderr passed the limit
	KillSeccomp       KillReason = "seccomp"         // forbidden system call in kill mode
	KillFileSizeLimit KillReason = "file_size_limit" // died of SIGXFSZ
	KillCancelled     KillReason = "cancelled"       // the caller went away
	KillShutdown      KillReason = "shutdown"        // the daemon was stopping
)

// KillReasons are all the reasons a jail or a call is killed for (not
// KillNone), in the order of the constants; TestEveryKillReasonIsListed
// finds each KillReason constant of the package here.
func KillReasons() []KillReason {
	return []KillReason{KillMemoryLimit, KillWallTimeout, KillCPUTimeout, KillOutputLimit, KillSeccomp,
		KillFileSizeLimit, KillCancelled, KillShutdown, KillControlLost}
}

// Error lets a KillReason be the cause of a cancelled context: cancel a
// run's context with context.WithCancelCause(ctx)(nsjail.KillShutdown) and
// the result says "shutdown"; any other cause says "cancelled".
func (k KillReason) Error() string { return "jail killed: " + string(k) }

// Result is what one run did, from kernel evidence.
type Result struct {
	ID         string
	Status     Status
	ExitCode   int            // exit status; 128+N when the program died by signal N
	Signal     syscall.Signal // 0 unless the program died by a signal
	KillReason KillReason

	Stdout, Stderr                   []byte
	StdoutTruncated, StderrTruncated bool

	WallTime time.Duration // exec of python3 to the end of the last process
	CPUTime  time.Duration // user+system of every process (cgroup accounting)

	PeakMemoryBytes  int64  // cgroup high-water mark since exec; -1 when the kernel cannot tell
	PeakMemorySource string // the kernel file the peak came from; "" when unknown
	MemoryLimitBytes int64
	OOMKills         int64 // OOM kills in the jail's cgroup
	PidsPeak         int64 // most tasks at once; -1 when the kernel cannot tell
	PidsMaxHits      int64 // forks refused by the pids limit

	// Seccomp names the forbidden system calls the program made (nil:
	// none). A foreign-ABI call is named by its ABI and number, and ends
	// the jail (KillSeccomp), as does a call past seccomp.MaxNotifications.
	Seccomp *seccomp.Report

	// Report is what the program wrote to its report channel (Spec.Report),
	// at most MaxReportBytes; ReportTruncated says it wrote more.
	Report          []byte
	ReportTruncated bool

	// Files are the collected files (Spec.Collect), in path order.
	Files []CollectedFile

	CgroupVersion string    // "v1" or "v2"
	HostUID       uint32    // the host uid the jail ran as (uid 1000 inside)
	Prepared      bool      // the jail was prepared ahead of the request (Runner.KeepPrepared, or a warm run forked ahead)
	Start         StartMode // how the interpreter started: StartWarm or StartCold
}

// decide sets status, exit code, signal and kill reason from the wait
// status and the evidence gathered during the run. A reason recorded by
// this process (timer, watchdog, output cap, cancel, OOM notification) is
// trusted only if the jail did die of SIGKILL: a program that exited on its
// own just before the kill landed ended by itself. The first recorded
// reason wins a race between two causes.
func (res *Result) decide(ws syscall.WaitStatus, recorded KillReason) {
	switch {
	case ws.Exited():
		res.ExitCode = ws.ExitStatus()
		res.Status = StatusOK
		if res.ExitCode != 0 {
			res.Status = StatusError
		}
		return
	case !ws.Signaled():
		res.Status, res.ExitCode = StatusError, -1
		return
	}
	res.Signal = ws.Signal()
	res.ExitCode = 128 + int(res.Signal)
	res.Status = StatusSignaled
	switch {
	case res.Signal == syscall.SIGKILL && recorded != KillNone:
		res.KillReason = recorded
	case res.Signal == syscall.SIGKILL && res.OOMKills > 0:
		// The kernel's OOM killer (cgroup v2 memory.oom.group) ended the
		// jail before we saw an event.
		res.KillReason = KillMemoryLimit
	case res.Signal == syscall.SIGXFSZ:
		res.KillReason = KillFileSizeLimit
	case res.Signal == syscall.SIGXCPU:
		// RLIMIT_CPU, the per-process backstop of the cgroup watchdog.
		res.KillReason = KillCPUTimeout
	}
	if res.KillReason != KillNone {
		res.Status = StatusKilled
	}
}
