package nsjail

import (
	"context"
	"testing"

	"agentjail/internal/systest"
)

// BenchmarkRunPass is one whole jail of `pass`, as the daemon runs it, for
// profiles of the parent side: go test -bench RunPass -cpuprofile cpu.out.
func BenchmarkRunPass(b *testing.B) {
	systest.Require(b, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python)
	r, err := NewRunner()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		res, err := r.Run(context.Background(), &Spec{Program: []byte("pass"), Report: true, Limits: DefaultLimits()})
		if err != nil || res.Status != StatusOK {
			b.Fatal(err, res)
		}
	}
}
