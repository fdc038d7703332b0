//go:build !linux

package seccomp

// Instruction is one classic BPF instruction, laid out as Linux's struct
// sock_filter (unix.SockFilter there), so that programs can be read and
// written on any system.
type Instruction struct {
	Code uint16
	Jt   uint8
	Jf   uint8
	K    uint32
}
