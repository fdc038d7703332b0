//go:build linux && cgo && !agentjail_nolibseccomp

package seccomp

// Benchmarks of the filter in the kernel: install, a supervised round trip,
// the supervisor's CPU, an allowed call through the filter, compiling.

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"agentjail/internal/systest"
)

// BenchmarkInstall measures Install (prctl + seccomp) in a fresh process, as
// in the init stage; ns/op is the whole child, install-ns the two calls.
func BenchmarkInstall(b *testing.B) {
	requireKernel(b)
	var samples []float64
	for i := 0; i < b.N; i++ {
		c := startChild(b, "install", nil)
		unix.Close(c.listener)
		require.NoError(b, c.cmd.Wait(), c.stderr.String())
		ns, err := strconv.ParseFloat(strings.TrimSpace(c.stdout.String()), 64)
		require.NoError(b, err)
		samples = append(samples, ns)
	}
	sort.Float64s(samples)
	b.ReportMetric(samples[len(samples)/2], "install-ns(median)")
}

// BenchmarkSuperviseRoundTrip measures one forbidden call as the jail sees
// it: notification, Supervise's recv and EPERM answer, wake-up.
func BenchmarkSuperviseRoundTrip(b *testing.B) {
	requireKernel(b)
	c := startChild(b, "roundtrip", nil, fmt.Sprintf("%s=%d", childNEnv, b.N))
	var col Collector
	wait := supervise(context.Background(), c, ModeErrno, &col, nil)
	require.NoError(b, c.cmd.Wait(), c.stderr.String())
	require.NoError(b, wait())
	ns, err := strconv.ParseFloat(strings.TrimSpace(c.stdout.String()), 64)
	require.NoError(b, err)
	b.ReportMetric(ns/float64(b.N), "ns/roundtrip")
	require.Equal(b, b.N, col.Report().Calls[0].Count)
}

// BenchmarkSupervisorCPU measures what a flood of forbidden calls costs the
// supervisor's process (the daemon), which is not the jail's cgroup: this
// process's own CPU time (utime+stime; the child is not counted) per
// notification, beside the jail's CPU per call. It is the measurement behind
// MaxNotifications: go test -run '^$' -bench SupervisorCPU -benchtime 200000x ./seccomp
func BenchmarkSupervisorCPU(b *testing.B) {
	requireKernel(b)
	c := startChild(b, "roundtrip", nil, fmt.Sprintf("%s=%d", childNEnv, b.N))
	var col Collector
	cpu0 := systest.SelfCPU()
	b.ResetTimer()
	wait := supervise(context.Background(), c, ModeErrno, &col, nil)
	require.NoError(b, c.cmd.Wait(), c.stderr.String())
	require.NoError(b, wait())
	b.StopTimer()
	daemon := systest.SelfCPU() - cpu0
	jail := c.cmd.ProcessState.UserTime() + c.cmd.ProcessState.SystemTime()
	require.Equal(b, b.N, col.Total())
	b.ReportMetric(float64(daemon.Nanoseconds())/float64(b.N), "daemon-cpu-ns/notification")
	b.ReportMetric(float64(jail.Nanoseconds())/float64(b.N), "jail-cpu-ns/call")
	b.ReportMetric(float64(daemon.Nanoseconds())*MaxNotifications/float64(b.N)/1e6, "daemon-cpu-ms/MaxNotifications")
}

// BenchmarkFilteredAllowedCall measures an allowed call that the filter must
// evaluate (ioctl's TIOCSTI check), for comparison with the round trip.
func BenchmarkFilteredAllowedCall(b *testing.B) {
	requireKernel(b)
	c := startChild(b, "allowed", nil, fmt.Sprintf("%s=%d", childNEnv, b.N))
	wait := supervise(context.Background(), c, ModeErrno, new(Collector), nil)
	require.NoError(b, c.cmd.Wait(), c.stderr.String())
	require.NoError(b, wait())
	ns, err := strconv.ParseFloat(strings.TrimSpace(c.stdout.String()), 64)
	require.NoError(b, err)
	b.ReportMetric(ns/float64(b.N), "ns/ioctl")
}

func BenchmarkCompile(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := DefaultPolicy().Compile(); err != nil {
			b.Fatal(err)
		}
	}
}
