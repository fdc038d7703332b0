package seccomp

import (
	"encoding/binary"
	"fmt"
)

// The kernel's program size limit (BPF_MAXINSNS), and the code of a
// return of a constant (BPF_RET|BPF_K), as classic BPF has them on every
// system.
const (
	maxInstructions        = 4096
	bpfRet, bpfK    uint16 = 0x06, 0x00
)

// Program is a compiled filter: classic BPF for seccomp(SECCOMP_SET_MODE_FILTER).
// It is plain data, made once by Policy.Compile and carried to the jail's init
// stage with MarshalBinary/UnmarshalBinary.
type Program struct {
	Instructions []Instruction
}

// MarshalBinary encodes the instructions as struct sock_filter records in
// the host's byte order (8 bytes each).
func (p *Program) MarshalBinary() ([]byte, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 8*len(p.Instructions))
	for _, in := range p.Instructions {
		b = binary.NativeEndian.AppendUint16(b, in.Code)
		b = append(b, in.Jt, in.Jf)
		b = binary.NativeEndian.AppendUint32(b, in.K)
	}
	return b, nil
}

// UnmarshalBinary decodes what MarshalBinary (or libseccomp's
// seccomp_export_bpf) wrote.
func (p *Program) UnmarshalBinary(b []byte) error {
	if len(b)%8 != 0 {
		return fmt.Errorf("seccomp: program of %d bytes is not a whole number of instructions", len(b))
	}
	ins := make([]Instruction, len(b)/8)
	for i := range ins {
		r := b[8*i:]
		ins[i] = Instruction{
			Code: binary.NativeEndian.Uint16(r),
			Jt:   r[2],
			Jf:   r[3],
			K:    binary.NativeEndian.Uint32(r[4:]),
		}
	}
	q := Program{Instructions: ins}
	if err := q.check(); err != nil {
		return err
	}
	*p = q
	return nil
}

// check does what can be done without the kernel: a size the kernel accepts
// and a return at the end.
func (p *Program) check() error {
	n := len(p.Instructions)
	if n == 0 || n > maxInstructions {
		return fmt.Errorf("seccomp: program has %d instructions (want 1..%d)", n, maxInstructions)
	}
	if last := p.Instructions[n-1]; last.Code != bpfRet|bpfK {
		return fmt.Errorf("seccomp: program does not end with a return")
	}
	return nil
}
