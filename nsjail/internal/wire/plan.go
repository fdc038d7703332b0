package wire

import "encoding/binary"

// Plan encodes a plan: what the init stage (agentjail/nsjail/boot's
// init_plan_linux.c; C: no Go runtime starts in a jail) carries out, steps
// in order, each a system call or a small fixed sequence of them, with its
// arguments and the name a failure reports. nsjail's plan.go decides which
// steps a jail gets; this is only their encoding, which nsjail and the
// tests of the C decoder share. Little endian:
//
//	step:   op (1 byte) | stage (string) | arguments
//	string: length (4 bytes) | bytes | NUL (not counted)
//	u32, u64: 4 or 8 bytes
//
// Each op code's arguments are next to it (wire.go). The zero Plan is an
// empty plan.
type Plan struct{ b []byte }

// Bytes is the plan encoded so far.
func (p *Plan) Bytes() []byte { return p.b }

// Op begins a step of code op, which reports stage when it fails; its
// arguments follow.
func (p *Plan) Op(code byte, stage string) *Plan {
	p.b = append(p.b, code)
	return p.Str(stage)
}

// U32 appends a u32 argument.
func (p *Plan) U32(v uint32) *Plan { p.b = binary.LittleEndian.AppendUint32(p.b, v); return p }

// U64 appends a u64 argument.
func (p *Plan) U64(v uint64) *Plan { p.b = binary.LittleEndian.AppendUint64(p.b, v); return p }

// Bool appends a u32 argument, 1 for true and 0 for false.
func (p *Plan) Bool(v bool) *Plan {
	if v {
		return p.U32(1)
	}
	return p.U32(0)
}

// Blob appends a bytes argument (a string's encoding; it may hold NULs).
func (p *Plan) Blob(b []byte) *Plan { p.b = appendField(p.b, b); return p }

// Str appends a string argument: the C side refuses a NUL inside
// (nsjail's Spec.Validate refuses them first).
func (p *Plan) Str(s string) *Plan { p.b = appendField(p.b, s); return p }

// appendField appends v as the plan's strings and bytes are: its length,
// itself, and a NUL the length does not count.
func appendField[T string | []byte](b []byte, v T) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
	return append(append(b, v...), 0)
}

// Mount appends an OpMount step: mount(2) with these arguments ("" is
// NULL for source, fstype and data).
func (p *Plan) Mount(stage, source, target, fstype string, flags uint64, data string) *Plan {
	return p.Op(OpMount, stage).Str(source).Str(target).Str(fstype).U64(flags).Str(data)
}

// Mkdir appends an OpMkdir step: path made with mode (and, with parents,
// its parents, as mkdir -p).
func (p *Plan) Mkdir(stage, path string, mode uint32, parents bool) *Plan {
	return p.Op(OpMkdir, stage).Str(path).U32(mode).Bool(parents)
}
