package seccomp

import (
	"fmt"
	"sync"
)

// MaxNotifications is how many forbidden system calls (notifications) a jail
// may make: the next one ends it. Supervise marks the call that takes
// Collector.Total past it Violation.OverBudget and passes it to onViolation
// before answering it, in both modes; the caller kills the jail then, with
// kill_reason "seccomp" and a feedback line that says why.
//
// Each forbidden call costs the supervisor (the daemon), not the jail's
// cgroup, a poll, two ioctls and a wake-up: 4.7 to 9.7 µs of the daemon's
// CPU per notification on the development VM (2 CPUs, AMD EPYC, Linux 6.18;
// BenchmarkSupervisorCPU, four runs beside other load; the flood
// measured 8.3 µs). The bound caps what one jail can make the daemon spend on
// it at 5 to 10 ms of CPU, a few runs' worth of the daemon's own CPU per run
// (BENCHMARKS.md: 1.5 to 3 ms) and 0.1% of the default 10 s CPU limit,
// however long the jail's limits. Without it a jail looping on a forbidden
// call kept ~1 of the daemon's CPUs busy for its whole wall time. Ordinary
// Python makes none of these calls (nsjail's corpus of stdlib programs and
// getaddrinfo make zero); the probes a library can make (getaddrinfo with
// AI_ADDRCONFIG opens an AF_NETLINK socket, os.sync) are one per call, far
// below the bound. doc.go, "Notification budget".
const MaxNotifications = 1000

// Violation is one forbidden system call, as the kernel reported it to the
// supervisor. The call has not run and never will.
type Violation struct {
	Syscall string    // x86_64 name; "" when unknown or Foreign
	Number  int       // system call number as the kernel gave it (x32: with bit 0x40000000)
	Pid     int       // thread that made the call, in the supervisor's pid namespace
	Args    [6]uint64 // raw argument registers (pointers are not followed)
	// Detail names the arguments that made the filter forbid the call
	// (Detail(Syscall, Args)): "AF_NETLINK, NETLINK_AUDIT"; "" for a call
	// forbidden whatever its arguments, and for a foreign one.
	Detail string
	// Foreign: the call came through another ABI than x86_64's: i386
	// (`int 0x80`, Arch AUDIT_ARCH_I386), x32 (Arch AUDIT_ARCH_X86_64 with
	// bit 0x40000000 in Number), or any other architecture. No program of
	// the jail's has a reason to; Supervise passes it to onViolation before
	// it answers, in both modes, so that the caller can end the jail.
	Foreign bool
	Arch    uint32 // seccomp_data.arch (AUDIT_ARCH_*)
	// OverBudget: counting this call took Collector.Total past
	// MaxNotifications, it and every later one. Supervise passes it on
	// before it answers, in both modes; the caller ends the jail.
	OverBudget bool
}

// ABI names the calling convention of v: "" for native x86_64, else "x32",
// "i386" or "arch 0x…".
func (v Violation) ABI() string { return abiName(v.Arch, v.Number) }

func abiName(arch uint32, nr int) string {
	switch {
	case arch == auditArchX86_64 && uint32(nr)&x32SyscallBit == 0:
		return ""
	case arch == auditArchX86_64:
		return "x32"
	case arch == auditArchI386:
		return "i386"
	}
	return fmt.Sprintf("arch %#08x", arch)
}

// CallCount is how often one forbidden system call was attempted.
type CallCount struct {
	Syscall string `json:"syscall"`
	Number  int    `json:"number"`
	Count   int    `json:"count"`
	// ABI is "" for a native x86_64 call, else the foreign ABI it came
	// through ("x32", "i386", "arch 0x…"); Syscall is then "".
	ABI string `json:"abi,omitempty"`
	// Detail names the arguments the filter forbade the call for
	// (Violation.Detail): socket's family, and type and protocol where
	// they decided; absent when the call is forbidden whatever its
	// arguments. One call with two details is two entries.
	Detail string `json:"detail,omitempty"`
}

// Report is the `seccomp` field of a run result (docs/contract.md): the first
// forbidden call, then every forbidden call with its count, in the order of
// their first attempt.
type Report struct {
	Syscall string      `json:"syscall"`
	Number  int         `json:"number"`
	Calls   []CallCount `json:"calls"`
	// ABI is the first call's ABI ("" for native x86_64), as in CallCount.
	ABI string `json:"abi,omitempty"`
	// Detail is the first call's Detail, as in CallCount.
	Detail string `json:"detail,omitempty"`
}

// Collector counts violations; it is safe for concurrent use. The zero value
// is ready.
type Collector struct {
	mu      sync.Mutex
	calls   []CallCount     // in order of first attempt
	index   map[callKey]int // call → position in calls
	total   int
	foreign int
}

type callKey struct {
	arch   uint32
	nr     int
	detail string
}

// Add counts one attempt of the native x86_64 system call nr.
func (c *Collector) Add(nr int) { c.add(auditArchX86_64, nr, "") }

// AddViolation counts v, keeping a foreign-ABI call apart from the native
// call of the same number, and a native call with one Detail apart from
// the same call with another.
// It returns the new Total.
func (c *Collector) AddViolation(v Violation) int { return c.add(v.Arch, v.Number, v.Detail) }

func (c *Collector) add(arch uint32, nr int, detail string) int {
	abi := abiName(arch, nr)
	if abi == "" {
		arch = auditArchX86_64
	} else {
		detail = ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total++
	if abi != "" {
		c.foreign++
	}
	k := callKey{arch, nr, detail}
	if i, ok := c.index[k]; ok {
		c.calls[i].Count++
		return c.total
	}
	if c.index == nil {
		c.index = map[callKey]int{}
	}
	c.index[k] = len(c.calls)
	cc := CallCount{Number: nr, Count: 1, ABI: abi, Detail: detail}
	if abi == "" {
		cc.Syscall = SyscallName(nr)
	}
	c.calls = append(c.calls, cc)
	return c.total
}

// Total is the number of forbidden calls counted so far, native and foreign:
// the number of notifications the supervisor answered or is answering. A
// jail whose Total exceeds MaxNotifications is ended (Violation.OverBudget).
func (c *Collector) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Foreign is the number of foreign-ABI calls among Total.
func (c *Collector) Foreign() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.foreign
}

// Report returns what was counted so far, or nil (JSON null) when nothing
// was. The result is a copy.
func (c *Collector) Report() *Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.calls) == 0 {
		return nil
	}
	calls := append([]CallCount(nil), c.calls...)
	return newReport(calls)
}

// Since is what r counted beyond before (an earlier Report of the same
// Collector, nil for none): each call's count less its count then, the
// calls that were not made since left out, in the order of their first
// attempt; nil when nothing was. A session's call reports its own
// forbidden calls this way, from the session's one supervisor.
func (r *Report) Since(before *Report) *Report {
	if r == nil || before == nil {
		return r
	}
	type key struct {
		abi    string // a native call and a foreign one may share a number
		nr     int
		detail string
	}
	was := make(map[key]int, len(before.Calls))
	for _, c := range before.Calls {
		was[key{c.ABI, c.Number, c.Detail}] = c.Count
	}
	var calls []CallCount
	for _, c := range r.Calls {
		if n := c.Count - was[key{c.ABI, c.Number, c.Detail}]; n > 0 {
			c.Count = n
			calls = append(calls, c)
		}
	}
	if len(calls) == 0 {
		return nil
	}
	return newReport(calls)
}

// newReport is the Report of calls (not empty): the first one on top.
func newReport(calls []CallCount) *Report {
	return &Report{Syscall: calls[0].Syscall, Number: calls[0].Number, ABI: calls[0].ABI, Detail: calls[0].Detail, Calls: calls}
}
