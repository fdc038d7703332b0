package wire

import (
	"bytes"
	"testing"
)

// The encoding init_plan_linux.c decodes: an op byte, the stage, then the
// arguments; little endian; every string and bytes field its length, itself
// and a NUL the length does not count.
func TestPlanEncoding(t *testing.T) {
	var p Plan
	p.Op(OpChdir, "cd").Str("/").U32(0x01020304).U64(5).Bool(true).Bool(false).Blob([]byte{0, 7})
	p.Mount("m", "", "/t", "", 0x10, "d")
	p.Mkdir("k", "/a", 0o755, true)
	want := []byte{
		OpChdir, 2, 0, 0, 0, 'c', 'd', 0, // step: op, stage
		1, 0, 0, 0, '/', 0, // string
		4, 3, 2, 1, // u32
		5, 0, 0, 0, 0, 0, 0, 0, // u64
		1, 0, 0, 0, 0, 0, 0, 0, // true, false
		2, 0, 0, 0, 0, 7, 0, // bytes: a NUL inside is kept
		OpMount, 1, 0, 0, 0, 'm', 0,
		0, 0, 0, 0, 0, 2, 0, 0, 0, '/', 't', 0, 0, 0, 0, 0, 0, // source "", target, fstype ""
		0x10, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 'd', 0, // flags, data
		OpMkdir, 1, 0, 0, 0, 'k', 0, 2, 0, 0, 0, '/', 'a', 0, 0xed, 0x01, 0, 0, 1, 0, 0, 0, // path, 0o755, parents
	}
	if got := p.Bytes(); !bytes.Equal(got, want) {
		t.Fatalf("plan encoded as\n%v\nwant\n%v", got, want)
	}
	var empty Plan
	if len(empty.Bytes()) != 0 {
		t.Fatal("the zero Plan is not empty")
	}
}
