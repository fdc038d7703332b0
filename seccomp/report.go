package seccomp

import "sync"

// Violation is one forbidden system call, as the kernel reported it to the
// supervisor. The call has not run and never will.
type Violation struct {
	Syscall string    // x86_64 name, "" when unknown
	Number  int       // system call number
	Pid     int       // thread that made the call, in the supervisor's pid namespace
	Args    [6]uint64 // raw argument registers (pointers are not followed)
}

// CallCount is how often one forbidden system call was attempted.
type CallCount struct {
	Syscall string `json:"syscall"`
	Number  int    `json:"number"`
	Count   int    `json:"count"`
}

// Report is the `seccomp` field of a run result (CONTRACT.md): the first
// forbidden call, then every forbidden call with its count, in the order of
// their first attempt.
type Report struct {
	Syscall string      `json:"syscall"`
	Number  int         `json:"number"`
	Calls   []CallCount `json:"calls"`
}

// Collector counts violations; it is safe for concurrent use. The zero value
// is ready.
type Collector struct {
	mu    sync.Mutex
	calls []CallCount // in order of first attempt
	index map[int]int // number → position in calls
}

// Add counts one attempt of system call nr.
func (c *Collector) Add(nr int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i, ok := c.index[nr]; ok {
		c.calls[i].Count++
		return
	}
	if c.index == nil {
		c.index = map[int]int{}
	}
	c.index[nr] = len(c.calls)
	c.calls = append(c.calls, CallCount{Syscall: SyscallName(nr), Number: nr, Count: 1})
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
	return &Report{Syscall: calls[0].Syscall, Number: calls[0].Number, Calls: calls}
}
