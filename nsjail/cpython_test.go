package nsjail

import (
	"bufio"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

// cpythonModules are the modules of CPython's own test suite that matter
// to agents' programs: processes, files, terminals, sockets, event loops,
// packaging, imports, serialisation. Each runs in a jail of its own.
// Of test_asyncio (29 modules, over 150 s alone), the four that reach
// what a jail changes: its event loops over sockets, pipes and ptys
// (test_events), child processes (test_subprocess, test_unix_events) and
// streams; the rest is pure Python over those.
var cpythonModules = []string{
	// The slowest first (mostly waiting: sleeps, timeouts, child
	// processes), so that the others fill the time beside them.
	"test_venv", "test_subprocess", "test.test_asyncio.test_events", "test_socket",
	"test.test_asyncio.test_subprocess", "test_importlib", "test_pickle", "test_os",
	"test.test_asyncio.test_streams", "test_runpy", "test_shutil", "test_mimetypes",
	"test_uuid", "test.test_asyncio.test_unix_events", "test_pty", "test_mmap",
}

// cpythonParallel modules run at once. They wait far more than they
// compute (under 60 s of CPU for some 300 s of wall time, cold, on the
// 2-CPU development VM), so more than the CPUs.
const cpythonParallel = 4

// cpythonLimits are generous: the suite is not a program about limits.
func cpythonLimits() Limits {
	l := DefaultLimits()
	l.MemoryBytes, l.Pids, l.TmpBytes = 2<<30, 1024, 1<<30
	l.WallTime, l.CPUTime = 5*time.Minute, 5*time.Minute
	l.OutputBytes, l.OpenFiles, l.FileSizeBytes = 4<<20, 1024, 1<<30
	return l
}

// cpythonTestTimeout is regrtest's --timeout, for a whole module: one
// that hangs is ended and reported as a crash, with every thread's stack,
// before the jail's wall limit ends it without one.
const cpythonTestTimeout = "240"

// expectedFailure is one entry of testdata/cpython/expected_failures.txt.
type expectedFailure struct {
	pattern, reason string
	line            int
}

func loadExpectedFailures(t *testing.T) []expectedFailure {
	f, err := os.Open("testdata/cpython/expected_failures.txt")
	require.NoError(t, err)
	defer f.Close()
	var out []expectedFailure
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		pattern, reason, _ := strings.Cut(l, " ")
		reason = strings.TrimSpace(reason)
		_, err := path.Match(pattern, "")
		require.NoError(t, err, "expected_failures.txt:%d: a bad pattern", n)
		require.Regexp(t, `docs/(contract|security)\.md`, reason, "expected_failures.txt:%d: every entry says why, citing the document that says so", n)
		out = append(out, expectedFailure{pattern: pattern, reason: reason, line: n})
	}
	require.NoError(t, sc.Err())
	return out
}

// cpythonFailure is a test that failed or erred in a jail.
type cpythonFailure struct{ id, kind, msg string }

var (
	caseLine = regexp.MustCompile(`(?m)^CASE (\S+) (fail|error) ?(.*)$`)
	doneLine = regexp.MustCompile(`(?m)^DONE (\S+) (\d+) (\d+) (-?\d+)$`)
)

// runCPythonModule runs one module in a jail (testdata/cpython/run.py)
// and returns its failures; a module that crashed or ran nothing fails t.
func runCPythonModule(t *testing.T, program []byte, module string) []cpythonFailure {
	s := &Spec{Program: program, Limits: cpythonLimits(), Etc: testEtc(),
		Env: map[string]string{"CPYTHON_TEST_MODULE": module, "CPYTHON_TEST_TIMEOUT": cpythonTestTimeout}}
	res := runIn(t, testRunner(t), s)
	okRun(t, res)
	out := string(res.Stdout)
	d := doneLine.FindStringSubmatch(out)
	if d == nil || d[2] == "0" {
		t.Errorf("%s did not run (regrtest crashed, hung or ran no test):\n%s\nstderr: %s", module, trim(res.Stdout), trim(res.Stderr))
		return nil
	}
	t.Logf("%s: %s tests, %s skipped, %d failed, in %v (CPU %v, peak %d MiB)", module, d[2], d[3],
		len(caseLine.FindAllString(out, -1)), res.WallTime.Round(time.Millisecond), res.CPUTime.Round(time.Millisecond), res.PeakMemoryBytes>>20)
	var fs []cpythonFailure
	for _, m := range caseLine.FindAllStringSubmatch(out, -1) {
		fs = append(fs, cpythonFailure{id: m[1], kind: m[2], msg: m[3]})
	}
	return fs
}

// CPython's own tests pass in a jail, but for the failures the jail
// causes by design, each listed in testdata/cpython/expected_failures.txt
// with its reason. A failure not listed fails this test, and so does an
// entry that no failure matched (fixed: take it out). The modules run
// cpythonParallel at a time, each in its own jail, cold or warm as the
// test mode says.
func TestCPythonSuite(t *testing.T) {
	if !testCold && !testWarm {
		// Not a missing host feature: a run in a prepared jail is a cold
		// one for its program, and scripts/test runs both other modes.
		t.Skip("runs with AGENTJAIL_TEST_COLD=1 and with AGENTJAIL_TEST_WARM=1")
	}
	systest.Require(t, systest.CPythonTests)
	testRunner(t)
	expected := loadExpectedFailures(t)
	program, err := os.ReadFile("testdata/cpython/run.py")
	require.NoError(t, err)
	var mu sync.Mutex
	var failures []cpythonFailure
	t.Run("modules", func(t *testing.T) {
		var wg sync.WaitGroup
		slots := make(chan struct{}, cpythonParallel)
		for _, m := range cpythonModules {
			wg.Add(1)
			slots <- struct{}{}
			go func() {
				defer func() { <-slots; wg.Done() }()
				t.Run(m, func(t *testing.T) {
					fs := runCPythonModule(t, program, m)
					mu.Lock()
					failures = append(failures, fs...)
					mu.Unlock()
				})
			}()
		}
		wg.Wait()
	})
	if t.Failed() {
		return // a module that did not run leaves its entries unmatched
	}
	unexpected, stale := judgeCPython(expected, failures)
	for _, f := range unexpected {
		t.Errorf("a new failure in a jail: %s (%s) %s", f.id, f.kind, f.msg)
	}
	for _, e := range stale {
		t.Errorf("expected_failures.txt:%d: %s no longer fails in a jail: take it out (it said: %s)", e.line, e.pattern, e.reason)
	}
	if !t.Failed() {
		t.Logf("%d failures, each expected (%d entries)", len(failures), len(expected))
	}
}

// judgeCPython returns the failures no entry of expected matches, and the
// entries that match no failure.
func judgeCPython(expected []expectedFailure, failures []cpythonFailure) (unexpected []cpythonFailure, stale []expectedFailure) {
	sort.Slice(failures, func(i, j int) bool { return failures[i].id < failures[j].id })
	matched := make([]bool, len(expected))
	for _, f := range failures {
		found := false
		for i, e := range expected {
			if ok, _ := path.Match(e.pattern, f.id); ok {
				matched[i], found = true, true
			}
		}
		if !found {
			unexpected = append(unexpected, f)
		}
	}
	for i, e := range expected {
		if !matched[i] {
			stale = append(stale, e)
		}
	}
	return unexpected, stale
}

// The judge: a failure no entry names is new; an entry no failure
// matches is stale; a pattern matches whole ids, * across dots.
func TestCPythonJudge(t *testing.T) {
	expected := []expectedFailure{
		{pattern: "test.test_socket.*UDPLITE*", line: 1},
		{pattern: "test.test_os.TestInvalidFD.test_fsync", line: 2},
		{pattern: "test.test_mmap.MmapTests.test_flush_return_value", line: 3},
	}
	failures := []cpythonFailure{
		{id: "test.test_socket.RecvmsgUDPLITE6Test.testRecvmsg"},
		{id: "test.test_socket.BasicUDPLITETest.testRecvFrom"},
		{id: "test.test_os.TestInvalidFD.test_fsync"},
		{id: "test.test_os.TestInvalidFD.test_fsync_extra"},
		{id: "test.test_socket.BasicUDPTest.testRecvFrom"},
	}
	unexpected, stale := judgeCPython(expected, failures)
	require.Equal(t, []cpythonFailure{{id: "test.test_os.TestInvalidFD.test_fsync_extra"}, {id: "test.test_socket.BasicUDPTest.testRecvFrom"}}, unexpected)
	require.Equal(t, []expectedFailure{expected[2]}, stale)
}
