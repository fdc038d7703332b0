package nsjail

import (
	"context"
	"testing"
	"time"

	"agentjail/internal/systest"
)

// BenchmarkRunPass is one whole jail of `pass`, for profiles of the
// parent side: go test -bench RunPass -cpuprofile cpu.out. The prepared
// variant is the daemon's path (the replacement's start included); two
// are kept, as the next run comes before the last one's replacement is
// ready, and prepared-share/op says how many runs had one.
func BenchmarkRunPass(b *testing.B) {
	systest.Require(b, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python)
	for _, prepared := range []int{0, 2} {
		name := map[int]string{0: "cold", 2: "prepared"}[prepared]
		b.Run(name, func(b *testing.B) {
			r, err := NewRunner()
			if err != nil {
				b.Fatal(err)
			}
			r.KeepPrepared(prepared, PreparedTemplate{})
			defer r.Close()
			cpu0, fromPrepared := systest.SelfCPU(), 0
			for b.Loop() {
				res, err := r.Run(context.Background(), &Spec{Program: []byte("pass"), Report: true, Limits: DefaultLimits()})
				if err != nil || res.Status != StatusOK {
					b.Fatal(err, res)
				}
				if res.Prepared {
					fromPrepared++
				}
			}
			b.ReportMetric(float64(fromPrepared)/float64(b.N), "prepared-share/op")
			// This process's own CPU (utime+stime; the jails are children,
			// not counted), as the daemon's "CPU per run".
			b.ReportMetric(float64(systest.SelfCPU()-cpu0)/float64(time.Millisecond)/float64(b.N), "parent-cpu-ms/op")
		})
	}
}
