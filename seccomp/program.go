//go:build linux

package seccomp

import (
	"fmt"
	"sort"

	"golang.org/x/sys/unix"
)

// x86_64 seccomp_data layout.
const (
	offNr   = 0  // seccomp_data.nr
	offArch = 4  // seccomp_data.arch
	offArgs = 16 // seccomp_data.args[0]; the low word of args[i] is at 16+8i (little-endian)
)

// assembler lays out a short classic-BPF program with symbolic forward
// jumps ("" means the next instruction).
type assembler struct {
	prog   []unix.SockFilter
	labels map[string]int
	refs   []labelRef
}

type labelRef struct {
	at     int
	jt, jf string // conditional targets
	ja     string // unconditional target
}

func (a *assembler) stmt(code uint16, k uint32) {
	a.prog = append(a.prog, unix.SockFilter{Code: code, K: k})
}

func (a *assembler) jump(code uint16, k uint32, jt, jf string) {
	a.refs = append(a.refs, labelRef{at: len(a.prog), jt: jt, jf: jf})
	a.prog = append(a.prog, unix.SockFilter{Code: code, K: k})
}

func (a *assembler) ja(to string) {
	a.refs = append(a.refs, labelRef{at: len(a.prog), ja: to})
	a.prog = append(a.prog, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JA})
}

func (a *assembler) label(name string) {
	if a.labels == nil {
		a.labels = map[string]int{}
	}
	a.labels[name] = len(a.prog)
}

// assemble resolves the jumps. Offsets are relative to the next
// instruction and must fit the 8-bit jt/jf fields; the prefix is far
// shorter than that, so a failure is a bug in this file.
func (a *assembler) assemble() []unix.SockFilter {
	off := func(from int, to string) uint32 {
		if to == "" {
			return 0
		}
		at, ok := a.labels[to]
		if !ok || at <= from {
			panic(fmt.Sprintf("seccomp: prefix: bad jump from %d to %q", from, to))
		}
		return uint32(at - from - 1)
	}
	for _, r := range a.refs {
		in := &a.prog[r.at]
		if r.ja != "" {
			in.K = off(r.at, r.ja)
			continue
		}
		jt, jf := off(r.at, r.jt), off(r.at, r.jf)
		if jt > 255 || jf > 255 {
			panic("seccomp: prefix: jump too long")
		}
		in.Jt, in.Jf = uint8(jt), uint8(jf)
	}
	return a.prog
}

// prefix returns the instructions that run before libseccomp's program. It
// sends a foreign architecture or an x32 number to the Forbid notification
// (libseccomp's bad-arch action is the same, but the decision should not
// rest on its layout), and does two things libseccomp 2.5 cannot express:
//
//   - ENOSYS for every number the policy does not know (above KnownThrough,
//     holes in the table, -1), while libseccomp's default action is the
//     Forbid notification. This is runc's patchbpf approach: with
//     libseccomp alone the default must be one or the other, and a
//     conditional rule whose conditions all fail falls to the default, so
//     socket(AF_VSOCK) would give an unreported ENOSYS.
//   - Except rules: "allow this call unless the low 32 bits of an argument
//     are X". In libseccomp an unconditional rule silently swallows the
//     conditional rules of the same call (seccomp_rule_add returns 0 and the
//     filter allows TIOCSTI), and 32-bit comparisons only arrive in 2.6.
//
// With the default policy:
//
//	      ld  [arch]
//	      jeq #AUDIT_ARCH_X86_64, 0, forbid  ; foreign arch (i386 int 0x80): notify
//	      ld  [nr]
//	      jeq #0xffffffff, enosys, 0          ; syscall(-1)
//	      jge #0x40000000, forbid, 0          ; x32 (and every nr above): notify
//	      jgt #KnownThrough, enosys, 0
//	      jge #337, 0, 1                      ; undefined 337..423
//	      jgt #423, 0, enosys
//	      jeq #__NR_ioctl, 0, 4
//	      ld  [args[1] low word]
//	      jeq #TIOCSTI, forbid, 0
//	      jeq #TIOCLINUX, forbid, 0
//	      ja  end
//	      jeq #__NR_prctl, 0, 3               ; A still holds nr
//	      ...
//	      ja  end
//	forbid: ret #SECCOMP_RET_USER_NOTIF
//	enosys: ret #SECCOMP_RET_ERRNO|ENOSYS
//	end:  (libseccomp's program)
//
// Every decision it makes is checked against Policy.decide for every number
// by the tests, and in the kernel by TestKernel*.
func prefix(p *Policy) []unix.SockFilter {
	const (
		ldW = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jgt = unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K
	)
	var a assembler
	a.stmt(ldW, offArch)
	a.jump(jeq, auditArchX86_64, "", "forbid")
	a.stmt(ldW, offNr)
	a.jump(jeq, 0xffffffff, "enosys", "")
	a.jump(jge, x32SyscallBit, "forbid", "")
	a.jump(jgt, uint32(p.KnownThrough), "enosys", "")
	for i, h := range holes(p.KnownThrough) {
		next := fmt.Sprintf("hole%d", i)
		a.jump(jge, uint32(h[0]), "", next)
		a.jump(jgt, uint32(h[1]), "", "enosys")
		a.label(next)
	}

	type except struct {
		nr int
		e  *Except
	}
	var ex []except
	for _, r := range p.Rules {
		if r.Except != nil {
			nr, _ := syscallNumber(r.Syscall)
			ex = append(ex, except{nr, r.Except})
		}
	}
	sort.Slice(ex, func(i, j int) bool { return ex[i].nr < ex[j].nr })
	for i, e := range ex {
		next := fmt.Sprintf("except%d", i)
		a.jump(jeq, uint32(e.nr), "", next)
		a.stmt(ldW, uint32(offArgs+8*e.e.Arg))
		for _, v := range e.e.Values {
			a.jump(jeq, v, "forbid", "")
		}
		a.ja("end")
		a.label(next)
	}
	a.ja("end")
	a.label("forbid")
	a.stmt(unix.BPF_RET|unix.BPF_K, retForbid)
	a.label("enosys")
	a.stmt(unix.BPF_RET|unix.BPF_K, retErrno|uint32(unix.ENOSYS))
	a.label("end")
	return a.assemble()
}

// holes returns the ranges [lo, hi] of numbers up to known that the kernel
// does not define.
func holes(known int) [][2]int {
	var out [][2]int
	for nr := 0; nr <= known; nr++ {
		if SyscallName(nr) != "" {
			continue
		}
		if n := len(out); n > 0 && out[n-1][1] == nr-1 {
			out[n-1][1] = nr
		} else {
			out = append(out, [2]int{nr, nr})
		}
	}
	return out
}
