package nsjail

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// warmRunner is a Runner of its own with a zygote of the default runtime
// (no entry: a run's program file runs as __main__), up and with its runs
// forked ahead.
func warmRunner(t *testing.T, s ZygoteSpec) *Runner {
	t.Helper()
	r := freshRunner(t)
	r.Log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r.KeepWarm(s)
	t.Cleanup(r.Close)
	require.Eventually(t, func() bool {
		up, ahead, _, _ := r.WarmStats()
		return up == 1 && ahead >= s.Ahead
	}, 30*time.Second, 10*time.Millisecond, "the zygote and its runs ahead")
	return r
}

func TestWarmRunBasics(t *testing.T) {
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: 1})
	for i := range 3 {
		res, err := r.Run(context.Background(), &Spec{Program: []byte(`import os, sys
print(os.getpid(), os.getppid(), os.getuid(), sorted(int(p) for p in os.listdir("/proc") if p.isdigit()), sys.argv)
print(open("/proc/self/uid_map").read().split())
`), Limits: DefaultLimits(), Start: StartWarm})
		require.NoError(t, err, "run %d", i)
		t.Logf("run %d: %s %s %v %v", i, res.Stdout, res.Stderr, res.WallTime, res.CPUTime)
		assert.Equal(t, StatusOK, res.Status, string(res.Stderr))
		assert.Equal(t, StartWarm, res.Start)
	}
}

// testWriter writes a Runner's log into the test's.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// A rough look at what a warm run costs beside a cold one (scripts/bench
// measures it properly).
func TestWarmCostLog(t *testing.T) {
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: 1})
	for _, start := range []StartMode{StartCold, StartWarm, StartCold, StartWarm} {
		var wall, cpu time.Duration
		t0 := time.Now()
		for range 20 {
			res, err := r.Run(context.Background(), &Spec{Program: []byte("pass"), Limits: DefaultLimits(), Start: start})
			require.NoError(t, err)
			require.Equal(t, StatusOK, res.Status, string(res.Stderr))
			wall += res.WallTime
			cpu += res.CPUTime
		}
		t.Logf("%s: %v per run, wall %v, cpu %v", start, time.Since(t0)/20, wall/20, cpu/20)
	}
}
