package nsjail

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

func init() {
	systest.Probe(systest.ZygoteLoop, func() string {
		if _, err := ZygoteLoop(); err != nil {
			return err.Error()
		}
		return ""
	})
}

// loopRunner is warmRunner with r.ZygoteLoop set to so, and its log in
// logs as well as the test's.
func loopRunner(t *testing.T, so []byte, logs *systest.Buffer) *Runner {
	t.Helper()
	r := freshRunner(t)
	r.ShareEtc = true
	r.ZygoteLoop = so
	r.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	r.KeepWarm(ZygoteSpec{Name: "default", Ahead: 1})
	t.Cleanup(r.Close)
	require.Eventually(t, func() bool { up, ahead, _, _ := r.WarmStats(); return up == 1 && ahead >= 1 },
		30*time.Second, 10*time.Millisecond, "the zygote and its run ahead")
	return r
}

// warmRuns runs n warm programs on r, each one's own pid 2 of its run, and
// checks each ran warm and left nothing behind.
func warmRuns(t *testing.T, r *Runner, n int) {
	t.Helper()
	for i := range n {
		s := &Spec{ID: NewID(), Program: []byte("import os\nprint(os.getpid(), os.getuid())\n"), Limits: DefaultLimits(), Start: StartWarm}
		mounts := systest.MountCount()
		res, err := r.Run(context.Background(), s)
		require.NoError(t, err, "run %d", i)
		assert.Equal(t, StatusOK, res.Status, "run %d: %s", i, res.Stderr)
		assert.Equal(t, StartWarm, res.Start, "run %d", i)
		assert.Equal(t, "2 1000\n", string(res.Stdout), "run %d", i)
		systest.NoLeftovers(t, res.HostUID, s.ID, mounts)
	}
}

// fdCount is how many fds pid holds.
func fdCount(t *testing.T, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	require.NoError(t, err)
	return len(fds)
}

// The runner NewRunner makes ships the zygote loop: the zygote loads it
// (the kernel maps it from its memfd), says it serves from it, and its
// runs work. Each run's socket is closed once its program is reaped:
// the zygote's fds are as many after runs as before.
func TestZygoteServesFromTheCLoop(t *testing.T) {
	systest.Require(t, systest.ZygoteLoop)
	so, err := ZygoteLoop()
	require.NoError(t, err)
	var logs systest.Buffer
	r := loopRunner(t, so, &logs)
	info, ok := r.WarmInfo("default")
	require.True(t, ok)
	assert.Equal(t, "c", info.Loop)
	py := zygoteOf(t, r, "default").py
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", py))
	require.NoError(t, err)
	assert.Contains(t, string(maps), "/memfd:agentjail-zygote-loop", "the zygote maps the loop")
	before := fdCount(t, py)
	warmRuns(t, r, 4)
	// The last run's replacement is forked ahead: its socket is the
	// zygote's until that program ends, as the one before it was.
	require.Eventually(t, func() bool { return fdCount(t, py) == before }, 10*time.Second, 20*time.Millisecond,
		"the zygote holds %d fds after its runs, %d before", fdCount(t, py), before)
	assert.NotContains(t, logs.String(), "zygote serves its forks from python")
	// The loop is the zygote's alone: a run's /code never holds it
	// (zygoteRequest ships it beside the environment's code, not in it).
	res, err := r.Run(context.Background(), &Spec{Program: []byte("import os\nprint(sorted(os.listdir('/code')))\n"),
		Limits: DefaultLimits(), Start: StartWarm})
	require.NoError(t, err)
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	assert.NotContains(t, string(res.Stdout), zygoteLoopName)
	if !testSelfInit {
		assert.NotNil(t, testRunner(t).ZygoteLoop, "NewRunner sets the loop")
	}
}

// Without the loop, or with one that does not load, the zygote serves
// from its python loop, says why, and the runner logs it.
func TestZygoteFallsBackToItsPythonLoop(t *testing.T) {
	for _, c := range []struct {
		name, why string
		so        []byte
	}{
		{"none shipped", "python: the daemon shipped no C loop", nil},
		{"not a shared object", "python: the C loop did not load: OSError: ", []byte("not a shared object\n")},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs systest.Buffer
			r := loopRunner(t, c.so, &logs)
			info, ok := r.WarmInfo("default")
			require.True(t, ok)
			assert.True(t, strings.HasPrefix(info.Loop, c.why), "loop %q", info.Loop)
			warmRuns(t, r, 2)
			// Other warnings are the host's (a kernel before 6.15 logs that
			// jails write their own /etc).
			if c.so == nil {
				assert.NotContains(t, logs.String(), "zygote serves its forks from python")
			} else {
				assert.Contains(t, logs.String(), "zygote serves its forks from python")
			}
		})
	}
}
