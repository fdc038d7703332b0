package nsjail

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

// The test binary is also the jail's init stage: the runner re-executes
// /proc/self/exe, which here is this binary.
func TestMain(m *testing.M) {
	if IsInit() {
		Init()
	}
	if os.Geteuid() == 0 {
		// A supplementary group, so that the tests can see that no jail
		// gets the caller's groups (root here usually has none).
		if err := syscall.Setgroups([]int{4242}); err != nil {
			fmt.Fprintln(os.Stderr, "setgroups:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	if runner != nil {
		runner.Close() // its prepared jails, and their groups made ahead
	}
	os.Exit(code)
}

var (
	runnerOnce sync.Once
	runner     *Runner
	runnerErr  error
)

// testRunner is the shared Runner of the integration tests, which need
// root, user namespaces and a memory cgroup. It keeps two jails prepared,
// as the daemon does; AGENTJAIL_TEST_COLD=1 runs the same tests with a jail
// started for each run, as `agentjail run` does, and AGENTJAIL_TEST_WARM=1
// with every run a fork of a zygote of the default runtime, as the
// daemon's warm runs are (scripts/test runs all three).
func testRunner(t *testing.T) *Runner {
	t.Helper()
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python)
	runnerOnce.Do(func() {
		runner, runnerErr = NewRunner()
		if runnerErr == nil && testSelfInit {
			runner.ExeFile, runner.ZygoteLoop = nil, nil
		}
		if runnerErr == nil && !testCold {
			// As the daemon's: each /etc written once and attached (local
			// mode, AGENTJAIL_TEST_COLD, writes it in each jail).
			runner.ShareEtc = true
		}
		switch {
		case runnerErr != nil:
		case testWarm:
			runner.KeepWarm(ZygoteSpec{Name: "default", Ahead: sharedPool, Etc: testEtc()})
			deadline := time.Now().Add(time.Minute)
			for up, _, _, _ := runner.WarmStats(); up == 0 && time.Now().Before(deadline); up, _, _, _ = runner.WarmStats() {
				time.Sleep(10 * time.Millisecond)
			}
		case !testCold:
			runner.KeepPrepared(sharedPool, PreparedTemplate{})
		}
	})
	require.NoError(t, runnerErr)
	return runner
}

// testWarm: AGENTJAIL_TEST_WARM=1, every test run is warm (testRunner);
// testCold: AGENTJAIL_TEST_COLD set, every one starts its own jail.
// testSelfInit: AGENTJAIL_TEST_SELF_INIT=1, the fallbacks of a binary
// built without scripts/build: jails start from this binary (its
// constructor, glibc), not from the standalone init (musl), and zygotes
// serve from their python loop, not the C one (Runner.ZygoteLoop).
var (
	testWarm     = os.Getenv("AGENTJAIL_TEST_WARM") == "1"
	testCold     = os.Getenv("AGENTJAIL_TEST_COLD") != ""
	testSelfInit = os.Getenv("AGENTJAIL_TEST_SELF_INIT") == "1"
)

// sharedPool is how many jails (or warm runs) the shared test runner
// keeps ready, unless testCold.
const sharedPool = 2

// testEtc is the host's /etc for the default runtime (HostEtc), one for
// every test: the warm test runner's zygote has it, and a run fits a
// zygote only with the same *Etc.
var testEtc = sync.OnceValue(func() *Etc {
	e, err := HostEtc(nil)
	if err != nil {
		panic(err)
	}
	return e
})

// jailRun runs code with the default limits changed by mod, and checks the
// host afterwards: no process, cgroup or mount may be left behind.
func jailRun(t *testing.T, code string, mod func(*Spec)) *Result {
	t.Helper()
	s := &Spec{Program: []byte(code), Limits: DefaultLimits()}
	if mod != nil {
		mod(s)
	}
	s.ID = NewID()
	res := runIn(t, testRunner(t), s)
	if t.Failed() || testing.Verbose() {
		t.Logf("status=%s exit=%d reason=%q wall=%v cpu=%v peak=%d prepared=%v\nstdout: %s\nstderr: %s",
			res.Status, res.ExitCode, string(res.KillReason), res.WallTime, res.CPUTime, res.PeakMemoryBytes, res.Prepared, trim(res.Stdout), trim(res.Stderr))
	}
	return res
}

// runIn runs s on r, and checks the host afterwards: no process, cgroup or
// mount may be left behind.
func runIn(t *testing.T, r *Runner, s *Spec) *Result {
	t.Helper()
	if s.ID == "" {
		s.ID = NewID()
	}
	testMode(r, s)
	mounts := systest.MountCount()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute+s.Limits.WallTime)
	defer cancel()
	res, err := r.Run(ctx, s)
	require.NoError(t, err)
	require.NotNil(t, res)
	if s.Start == StartWarm && r == runner {
		require.Equal(t, StartWarm, res.Start, "the test runner's zygote is up")
	}
	systest.NoLeftovers(t, res.HostUID, s.ID, mounts)
	return res
}

// programParent is what getppid() says in the test runner's jails: 1,
// the jail's init, whose child the program is; 0 in a warm run, whose
// program is forked into the jail by its zygote, outside the jail's pid
// namespace (its init adopts it: it reaps its orphans, and its end ends
// the jail).
func programParent() string {
	if testWarm {
		return "0"
	}
	return "1"
}

func trim(b []byte) string {
	s := string(b)
	if len(s) > 2000 {
		s = s[:2000] + "…"
	}
	return strings.TrimSpace(s)
}
