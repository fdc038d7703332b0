package nsjail

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

func init() {
	systest.Probe(systest.StandaloneInit, func() string {
		if _, err := SealedStandaloneInit(); err != nil {
			return err.Error()
		}
		return ""
	})
}

// initExeSize is the size of what a prepared jail's init stage executes
// (its /proc/PID/exe, which root may stat).
func initExeSize(t *testing.T, r *Runner) int64 {
	t.Helper()
	r.KeepPrepared(1, PreparedTemplate{})
	waitPrepared(t, r, 1)
	pids := initStagesOf(t, r)
	require.Len(t, pids, 1)
	st, err := os.Stat(fmt.Sprintf("/proc/%d/exe", pids[0]))
	require.NoError(t, err)
	return st.Size()
}

// runBoth runs a program cold and warm on r (its zygote kept by KeepWarm)
// and checks both ran as they should.
func runBoth(t *testing.T, r *Runner) {
	t.Helper()
	r.ShareEtc = true
	r.KeepWarm(ZygoteSpec{Name: "default", Ahead: 1})
	require.Eventually(t, func() bool { up, ahead, _, _ := r.WarmStats(); return up == 1 && ahead >= 1 }, 30*time.Second, 10*time.Millisecond)
	for _, start := range []StartMode{StartCold, StartWarm} {
		s := &Spec{ID: NewID(), Program: []byte("import os\nprint(os.getpid() > 1, os.getuid(), open('/proc/1/cmdline').read())\n"),
			Limits: DefaultLimits(), Start: start}
		mounts := systest.MountCount()
		res, err := r.Run(context.Background(), s)
		require.NoError(t, err, "%s", start)
		assert.Equal(t, StatusOK, res.Status, "%s: %s", start, res.Stderr)
		assert.Equal(t, start, res.Start)
		assert.Equal(t, "True 1000 agentjail-init\x00\n", string(res.Stdout), "%s", start)
		systest.NoLeftovers(t, res.HostUID, s.ID, mounts)
	}
}

// The runner NewRunner makes runs every jail's bootstrap and init stage
// from the standalone init (the binary scripts/build embeds), cold and
// warm; the suite's other tests run through it too.
func TestJailsRunTheStandaloneInit(t *testing.T) {
	systest.Require(t, systest.StandaloneInit)
	f, err := SealedStandaloneInit()
	require.NoError(t, err)
	if !testSelfInit {
		require.Same(t, f, testRunner(t).ExeFile)
	}
	st, err := f.Stat()
	require.NoError(t, err)
	assert.Less(t, st.Size(), int64(1<<20), "a small static program, not a copy of this binary")

	r := freshRunner(t)
	t.Cleanup(r.Close)
	assert.Equal(t, st.Size(), initExeSize(t, r))
	runBoth(t, r)
}

// Without the standalone init (a binary built by go build alone), jails
// run from the binary itself, whose constructor runs the same C built
// with glibc: cold, prepared and warm.
func TestJailsRunFromThisBinaryToo(t *testing.T) {
	r := freshRunner(t)
	r.ExeFile = nil
	t.Cleanup(r.Close)
	self, err := os.Stat("/proc/self/exe")
	require.NoError(t, err)
	assert.Equal(t, self.Size(), initExeSize(t, r))
	runBoth(t, r)
}
