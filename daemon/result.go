package daemon

import (
	"fmt"
	"math"
	"time"

	"golang.org/x/sys/unix"

	"agentjail/nsjail"
	"agentjail/seccomp"
)

// Result is the result object of CONTRACT.md §3, as both `agentjail run`
// and POST /v1/run return it.
type Result struct {
	ID              string          `json:"id"`
	Status          string          `json:"status"`
	ExitCode        int             `json:"exit_code"`
	Signal          string          `json:"signal"`
	KillReason      string          `json:"kill_reason"`
	Seccomp         *seccomp.Report `json:"seccomp"`
	Stdout          string          `json:"stdout"`
	Stderr          string          `json:"stderr"`
	StdoutTruncated bool            `json:"stdout_truncated"`
	StderrTruncated bool            `json:"stderr_truncated"`

	WallTimeMs float64 `json:"wall_time_ms"`
	CPUTimeMs  float64 `json:"cpu_time_ms"`

	// PeakMemoryBytes is null when the kernel cannot tell (cgroup v2
	// before Linux 5.19); PeakMemorySource names the kernel file it came from.
	PeakMemoryBytes  *int64 `json:"peak_memory_bytes"`
	PeakMemorySource string `json:"peak_memory_source"`
	MemoryLimitBytes int64  `json:"memory_limit_bytes"`
	OOMKills         int64  `json:"oom_kills"`
	PidsPeak         *int64 `json:"pids_peak"`     // null when the kernel has no pids.peak
	PidsLimitHits    int64  `json:"pids_max_hits"` // forks refused by the pids limit

	Exception *Exception   `json:"exception"`
	Tests     *TestsResult `json:"tests"`
	Feedback  []string     `json:"feedback"`
	Files     []ResultFile `json:"files"`
}

// FromJail converts a jail's result into the contract's result object.
func FromJail(r *nsjail.Result) *Result {
	out := &Result{
		ID:               r.ID,
		Status:           string(r.Status),
		ExitCode:         r.ExitCode,
		KillReason:       string(r.KillReason),
		Seccomp:          r.Seccomp,
		Stdout:           string(r.Stdout),
		Stderr:           string(r.Stderr),
		StdoutTruncated:  r.StdoutTruncated,
		StderrTruncated:  r.StderrTruncated,
		WallTimeMs:       ms(r.WallTime),
		CPUTimeMs:        ms(r.CPUTime),
		PeakMemorySource: r.PeakMemorySource,
		MemoryLimitBytes: r.MemoryLimitBytes,
		OOMKills:         r.OOMKills,
		PidsLimitHits:    r.PidsMaxHits,
		Feedback:         Feedback(r),
		Files:            []ResultFile{},
	}
	if r.Signal != 0 {
		out.Signal = unix.SignalName(r.Signal)
	}
	if r.PeakMemoryBytes >= 0 {
		out.PeakMemoryBytes = &r.PeakMemoryBytes
	}
	if r.PidsPeak >= 0 {
		out.PidsPeak = &r.PidsPeak
	}
	return out
}

// ms is a duration in milliseconds, to 0.1 ms.
func ms(d time.Duration) float64 { return math.Round(float64(d)/1e5) / 10 }

// Feedback gives the sentences of CONTRACT.md §3 that an automated repair
// loop can act on. Empty when the program ended well.
func Feedback(r *nsjail.Result) []string {
	fb := []string{}
	switch r.KillReason {
	case nsjail.KillMemoryLimit:
		fb = append(fb, fmt.Sprintf("The program was killed because it used more than its memory limit of %s (peak %s); use less memory, e.g. process data in chunks or use generators.", Bytes(r.MemoryLimitBytes), peak(r)))
	case nsjail.KillWallTimeout:
		fb = append(fb, fmt.Sprintf("The program was killed after running for %s of wall-clock time, its limit; look for an infinite loop, a blocking read or a long sleep.", Duration(r.WallTime)))
	case nsjail.KillCPUTimeout:
		fb = append(fb, fmt.Sprintf("The program was killed after using %s of CPU time, past its limit; make the algorithm faster or look for an infinite loop.", Duration(r.CPUTime)))
	case nsjail.KillOutputLimit:
		fb = append(fb, "The program was killed because it printed more than its output limit; print less (e.g. a summary instead of every item).")
	case nsjail.KillFileSizeLimit:
		fb = append(fb, "The program was killed because it wrote a file larger than the file size limit.")
	case nsjail.KillSeccomp:
		if r.Seccomp != nil {
			fb = append(fb, fmt.Sprintf("The program was killed because it made the forbidden system call %s; the sandbox does not allow it, so do without it.", callName(r.Seccomp.Syscall, r.Seccomp.Number)))
		} else {
			fb = append(fb, "The program was killed because it made a system call of a foreign ABI (32-bit or x32), which the sandbox never allows.")
		}
	case nsjail.KillCancelled:
		fb = append(fb, "The run was cancelled by the caller.")
	case nsjail.KillShutdown:
		fb = append(fb, "The run was stopped because the sandbox service was shutting down; run it again.")
	}
	if r.Status == nsjail.StatusSignaled {
		fb = append(fb, fmt.Sprintf("The program crashed with signal %s.", unix.SignalName(r.Signal)))
	}
	if r.Seccomp != nil && r.KillReason != nsjail.KillSeccomp {
		fb = append(fb, fmt.Sprintf("The forbidden system call %s failed with EPERM (PermissionError); the sandbox does not allow it, so do without it.", callName(r.Seccomp.Syscall, r.Seccomp.Number)))
	}
	if r.PidsMaxHits > 0 {
		fb = append(fb, fmt.Sprintf("Starting a process or thread failed %d time(s) because the jail's process limit was reached; start fewer processes or threads.", r.PidsMaxHits))
	}
	return fb
}

func callName(name string, nr int) string {
	if name == "" {
		return fmt.Sprintf("number %d", nr)
	}
	return name
}

func peak(r *nsjail.Result) string {
	if r.PeakMemoryBytes < 0 {
		return "unknown"
	}
	return Bytes(r.PeakMemoryBytes)
}

// Bytes formats a size for people: "9.1 MiB".
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Duration formats a time for people: "31 ms", "0.4 s".
func Duration(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}
