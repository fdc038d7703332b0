package nsjail

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

// The cases that need two jails at once (two concurrent jobs look for
// each other, one attacks while another must be unharmed) run each as a
// job of its own, started by startJail, in the test's start mode (as
// runIn: warm under AGENTJAIL_TEST_WARM, a prepared jail by default, a
// fresh one under AGENTJAIL_TEST_COLD), unless the spec names its own.

// testMode gives s the test's start mode on the shared test runner,
// unless s names its own: other runners test their own kind.
func testMode(r *Runner, s *Spec) {
	if testWarm && s.Start == "" && r == runner {
		s.Start = StartWarm
		if s.Etc == nil && len(s.ReadOnlyMounts) == 0 {
			s.Etc = testEtc()
		}
	}
}

// startJail starts s on r in the test's start mode, on its own
// goroutine, and returns at once. wait returns its result, after checking
// that it ran in that mode and left nothing behind (process, cgroup,
// mount); a run still going at the test's end is cancelled. Only wait
// calls testing.T methods.
func startJail(t *testing.T, r *Runner, s *Spec) (wait func() *Result) {
	t.Helper()
	if s.ID == "" {
		s.ID = NewID()
	}
	testMode(r, s)
	mounts := systest.MountCount()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	type outcome struct {
		res *Result
		err error
	}
	ch := make(chan outcome, 1)
	go func() {
		res, err := r.Run(ctx, s)
		ch <- outcome{res, err}
	}()
	var once sync.Once
	var o outcome
	get := func() { once.Do(func() { o = <-ch }) }
	t.Cleanup(func() { cancel(); get() })
	return func() *Result {
		t.Helper()
		get()
		cancel()
		require.NoError(t, o.err)
		require.NotNil(t, o.res)
		if s.Start != "" {
			require.Equal(t, s.Start, o.res.Start, "the run's start mode (is the zygote up?)")
		}
		systest.NoLeftovers(t, o.res.HostUID, s.ID, mounts)
		logResult(t, o.res)
		return o.res
	}
}

// runTwo runs a and b at the same time, each a job of its own in the
// test's start mode, and returns their results once both have ended.
func runTwo(t *testing.T, r *Runner, a, b *Spec) (*Result, *Result) {
	t.Helper()
	wa, wb := startJail(t, r, a), startJail(t, r, b)
	return wa(), wb()
}
