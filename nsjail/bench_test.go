package nsjail

import (
	"context"
	"testing"

	"agentjail/internal/systest"
)

// BenchmarkRunPass is one whole jail of `pass`, for profiles of the
// parent side: go test -bench RunPass -cpuprofile cpu.out. The prepared
// variant is the daemon's path (the replacement's start included).
func BenchmarkRunPass(b *testing.B) {
	systest.Require(b, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python)
	for _, prepared := range []int{0, 1} {
		name := map[int]string{0: "cold", 1: "prepared"}[prepared]
		b.Run(name, func(b *testing.B) {
			r, err := NewRunner()
			if err != nil {
				b.Fatal(err)
			}
			r.KeepPrepared(prepared, PreparedTemplate{})
			defer r.Close()
			for b.Loop() {
				res, err := r.Run(context.Background(), &Spec{Program: []byte("pass"), Report: true, Limits: DefaultLimits()})
				if err != nil || res.Status != StatusOK {
					b.Fatal(err, res)
				}
			}
		})
	}
}
