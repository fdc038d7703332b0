package seccomp

import "golang.org/x/sys/unix"

// Instruction is one classic BPF instruction, the kernel's struct
// sock_filter.
type Instruction = unix.SockFilter
