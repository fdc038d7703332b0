package seccomp

import (
	"fmt"
	"sync"
)

// Violation is one forbidden system call, as the kernel reported it to the
// supervisor. The call has not run and never will.
type Violation struct {
	Syscall string    // x86_64 name; "" when unknown or Foreign
	Number  int       // system call number as the kernel gave it (x32: with bit 0x40000000)
	Pid     int       // thread that made the call, in the supervisor's pid namespace
	Args    [6]uint64 // raw argument registers (pointers are not followed)
	// Foreign: the call came through another ABI than x86_64's: i386
	// (`int 0x80`, Arch AUDIT_ARCH_I386), x32 (Arch AUDIT_ARCH_X86_64 with
	// bit 0x40000000 in Number), or any other architecture. No program of
	// the jail's has a reason to; Supervise passes it to onViolation before
	// it answers, in both modes, so that the caller can end the jail.
	Foreign bool
	Arch    uint32 // seccomp_data.arch (AUDIT_ARCH_*)
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
}

// Report is the `seccomp` field of a run result (CONTRACT.md): the first
// forbidden call, then every forbidden call with its count, in the order of
// their first attempt.
type Report struct {
	Syscall string      `json:"syscall"`
	Number  int         `json:"number"`
	Calls   []CallCount `json:"calls"`
	// ABI is the first call's ABI ("" for native x86_64), as in CallCount.
	ABI string `json:"abi,omitempty"`
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
	arch uint32
	nr   int
}

// Add counts one attempt of the native x86_64 system call nr.
func (c *Collector) Add(nr int) { c.add(auditArchX86_64, nr) }

// AddViolation counts v, keeping a foreign-ABI call apart from the native
// call of the same number.
// It returns the new Total.
func (c *Collector) AddViolation(v Violation) int { return c.add(v.Arch, v.Number) }

func (c *Collector) add(arch uint32, nr int) int {
	abi := abiName(arch, nr)
	if abi == "" {
		arch = auditArchX86_64
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total++
	if abi != "" {
		c.foreign++
	}
	k := callKey{arch, nr}
	if i, ok := c.index[k]; ok {
		c.calls[i].Count++
		return c.total
	}
	if c.index == nil {
		c.index = map[callKey]int{}
	}
	c.index[k] = len(c.calls)
	cc := CallCount{Number: nr, Count: 1, ABI: abi}
	if abi == "" {
		cc.Syscall = SyscallName(nr)
	}
	c.calls = append(c.calls, cc)
	return c.total
}

// Total is the number of forbidden calls counted so far, native and foreign:
// the number of notifications the supervisor answered or is answering.
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
	return &Report{Syscall: calls[0].Syscall, Number: calls[0].Number, ABI: calls[0].ABI, Calls: calls}
}
