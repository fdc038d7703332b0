package cgroup

import (
	"fmt"
	"math"
	"time"
)

// Version is the cgroup version the Manager drives.
type Version string

const (
	V1 Version = "v1"
	V2 Version = "v2"
)

// Resources are the limits of one jail group. Zero value of a field = no
// limit.
type Resources struct {
	// MemoryBytes is a hard limit on the group's memory (anon, page cache,
	// tmpfs, kernel). Swap is always disabled: v1 memory.memsw.limit_in_bytes
	// = limit when the file exists and memory.swappiness=0; v2
	// memory.swap.max=0 and memory.oom.group=1. The kernel rounds it down
	// to a whole page.
	MemoryBytes int64
	// Pids is the maximum number of tasks (processes + threads).
	Pids int64
	// CPUs is CPU bandwidth in CPUs: quota = CPUs × 100000 µs per 100000 µs
	// period (at least 1000 µs, the kernel's minimum); 0 = unlimited.
	CPUs float64
}

// Stats are the figures of a run, read from the kernel after it.
type Stats struct {
	// PeakMemoryBytes is the high-water mark since Attach; -1 when the
	// kernel cannot tell.
	PeakMemoryBytes int64
	// PeakMemorySource names the file PeakMemoryBytes came from:
	// "memory.max_usage_in_bytes" (v1), "memory.peak" (v2, reset at
	// Attach), "memory.peak (since creation)" (v2 kernel < 6.12, no reset),
	// "" when unknown (v2 kernel < 5.19).
	PeakMemorySource string
	// OOMKills counts OOM kills in the group since Attach (a v2 group kill
	// counts once).
	OOMKills int64
	// CPUTime is user+system CPU time of all processes of the group.
	CPUTime time.Duration
	// PidsPeak is pids.peak where the kernel has it, else -1.
	PidsPeak int64
	// PidsMaxHits counts forks refused by the pids limit since Attach.
	PidsMaxHits int64
	// MemoryLimitBytes is the limit in force (as set, rounded down to a
	// page as the kernel does); 0 when unlimited.
	MemoryLimitBytes int64
}

const (
	cpuPeriodUS   = 100000
	cpuMinQuotaUS = 1000
	// maxNameLen is NAME_MAX.
	maxNameLen = 255
	// supervisorName is the v2 leaf this process moves itself into.
	supervisorName = "supervisor"
)

// validName checks a group or subtree name: one path component of
// [A-Za-z0-9_.-]+, not containing "..", not "." and at most NAME_MAX bytes.
func validName(name string) error {
	if name == "" || name == "." || len(name) > maxNameLen {
		return fmt.Errorf("%q: %w", name, ErrInvalidName)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '_' || c == '-' || c == '.'
		if !ok || c == '.' && i+1 < len(name) && name[i+1] == '.' {
			return fmt.Errorf("%q: %w", name, ErrInvalidName)
		}
	}
	return nil
}

// limits are Resources turned into kernel values.
type limits struct {
	memory  int64 // bytes, 0 = none
	pids    int64 // 0 = none
	quotaUS int64 // 0 = none
}

func (r Resources) limits() (limits, error) {
	switch {
	case r.MemoryBytes < 0:
		return limits{}, fmt.Errorf("memory %d: %w", r.MemoryBytes, ErrInvalidResources)
	case r.Pids < 0:
		return limits{}, fmt.Errorf("pids %d: %w", r.Pids, ErrInvalidResources)
	case r.CPUs < 0 || math.IsNaN(r.CPUs) || math.IsInf(r.CPUs, 0) || r.CPUs > 1<<20:
		return limits{}, fmt.Errorf("cpus %v: %w", r.CPUs, ErrInvalidResources)
	}
	l := limits{memory: r.MemoryBytes, pids: r.Pids}
	if r.CPUs > 0 {
		l.quotaUS = max(int64(math.Round(r.CPUs*cpuPeriodUS)), cpuMinQuotaUS)
	}
	return l, nil
}

// limitInForce is what the kernel keeps of a memory limit: page_counter
// rounds down to whole pages.
func limitInForce(bytes, pageSize int64) int64 {
	if bytes <= 0 {
		return 0
	}
	return bytes / pageSize * pageSize
}
