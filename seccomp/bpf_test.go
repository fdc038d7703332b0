//go:build linux

package seccomp

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// input is struct seccomp_data.
type input struct {
	nr   int32
	arch uint32
	ip   uint64
	args [6]uint64
}

func (in input) bytes() []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[0:], uint32(in.nr))
	binary.LittleEndian.PutUint32(b[4:], in.arch)
	binary.LittleEndian.PutUint64(b[8:], in.ip)
	for i, a := range in.args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

// run evaluates a seccomp classic-BPF program the way the kernel does
// (seccomp_data is loaded in host byte order, little-endian here; x/net/bpf's
// VM loads big-endian, hence this interpreter). It fails on anything the
// kernel's seccomp_check_filter would refuse, so that the decision tests
// cannot pass on a program the kernel would not load.
func run(prog []unix.SockFilter, in input) (uint32, error) {
	data := in.bytes()
	var a, x uint32
	var mem [16]uint32
	for pc := 0; pc < len(prog); pc++ {
		ins := prog[pc]
		k := ins.K
		switch ins.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			if k%4 != 0 || int(k)+4 > len(data) {
				return 0, fmt.Errorf("pc %d: load at offset %d", pc, k)
			}
			a = binary.LittleEndian.Uint32(data[k:])
		case unix.BPF_LD | unix.BPF_W | unix.BPF_LEN:
			a = uint32(len(data))
		case unix.BPF_LDX | unix.BPF_W | unix.BPF_LEN:
			x = uint32(len(data))
		case unix.BPF_LD | unix.BPF_IMM:
			a = k
		case unix.BPF_LDX | unix.BPF_IMM:
			x = k
		case unix.BPF_LD | unix.BPF_MEM, unix.BPF_LDX | unix.BPF_MEM, unix.BPF_ST, unix.BPF_STX:
			if k >= 16 {
				return 0, fmt.Errorf("pc %d: scratch slot %d", pc, k)
			}
			switch ins.Code {
			case unix.BPF_LD | unix.BPF_MEM:
				a = mem[k]
			case unix.BPF_LDX | unix.BPF_MEM:
				x = mem[k]
			case unix.BPF_ST:
				mem[k] = a
			default:
				mem[k] = x
			}
		case unix.BPF_MISC | unix.BPF_TAX:
			x = a
		case unix.BPF_MISC | unix.BPF_TXA:
			a = x
		case unix.BPF_RET | unix.BPF_K:
			return k, nil
		case unix.BPF_RET | unix.BPF_A:
			return a, nil
		case unix.BPF_JMP | unix.BPF_JA:
			pc += int(k)
		default:
			v := k
			if ins.Code&unix.BPF_X != 0 {
				v = x
			}
			switch ins.Code & 0x07 { // class
			case unix.BPF_ALU:
				res, divZero, ok := alu(ins.Code, a, v)
				switch {
				case !ok:
					return 0, fmt.Errorf("pc %d: ALU op %#x", pc, ins.Code)
				case divZero:
					return 0, nil // the kernel returns 0 (KILL) on division by zero
				}
				a = res
			case unix.BPF_JMP:
				cond, ok := jumpIf(ins.Code, a, v)
				if !ok {
					return 0, fmt.Errorf("pc %d: jump op %#x", pc, ins.Code)
				}
				if cond {
					pc += int(ins.Jt)
				} else {
					pc += int(ins.Jf)
				}
			default:
				return 0, fmt.Errorf("pc %d: opcode %#x", pc, ins.Code)
			}
		}
	}
	return 0, fmt.Errorf("fell off the end of the program")
}

// alu is a after the ALU instruction code with the operand v; divZero
// when it divides by zero, not ok for an operation seccomp refuses.
func alu(code uint16, a, v uint32) (res uint32, divZero, ok bool) {
	switch code & 0xf0 {
	case unix.BPF_ADD:
		return a + v, false, true
	case unix.BPF_SUB:
		return a - v, false, true
	case unix.BPF_MUL:
		return a * v, false, true
	case unix.BPF_DIV:
		if v == 0 {
			return 0, true, true
		}
		return a / v, false, true
	case unix.BPF_MOD:
		if v == 0 {
			return 0, true, true
		}
		return a % v, false, true
	case unix.BPF_OR:
		return a | v, false, true
	case unix.BPF_AND:
		return a & v, false, true
	case unix.BPF_XOR:
		return a ^ v, false, true
	case unix.BPF_LSH:
		return a << v, false, true
	case unix.BPF_RSH:
		return a >> v, false, true
	case unix.BPF_NEG:
		return -a, false, true
	}
	return 0, false, false
}

// jumpIf is whether the conditional jump code with the operand v jumps
// from a; not ok for a comparison seccomp refuses.
func jumpIf(code uint16, a, v uint32) (cond, ok bool) {
	switch code & 0xf0 {
	case unix.BPF_JEQ:
		return a == v, true
	case unix.BPF_JGT:
		return a > v, true
	case unix.BPF_JGE:
		return a >= v, true
	case unix.BPF_JSET:
		return a&v != 0, true
	}
	return false, false
}

// retString names a seccomp return value for the golden file.
func retString(r uint32) string {
	switch {
	case r == retAllow:
		return "ALLOW"
	case r == retForbid:
		return "FORBID"
	case r == retKillProcess:
		return "KILL_PROCESS"
	case r == retSucceed:
		return "SUCCEED" // ERRNO(0): returns 0, the call does not run
	case r&0xffff0000 == retErrno:
		if e := unix.Errno(r & 0xffff); unix.ErrnoName(e) != "" {
			return "ERRNO(" + unix.ErrnoName(e) + ")"
		}
		return fmt.Sprintf("ERRNO(%d)", r&0xffff)
	}
	return fmt.Sprintf("%#08x", r)
}
