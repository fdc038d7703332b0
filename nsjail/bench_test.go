package nsjail

import (
	"context"
	"syscall"
	"testing"
	"time"

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
			cpu0 := selfCPU()
			for b.Loop() {
				res, err := r.Run(context.Background(), &Spec{Program: []byte("pass"), Report: true, Limits: DefaultLimits()})
				if err != nil || res.Status != StatusOK {
					b.Fatal(err, res)
				}
			}
			// This process's own CPU (utime+stime; the jails are children,
			// not counted), as the daemon's "CPU per run".
			b.ReportMetric(float64(selfCPU()-cpu0)/float64(time.Millisecond)/float64(b.N), "parent-cpu-ms/op")
		})
	}
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
