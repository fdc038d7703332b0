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
	"test_os", "test_shutil", "test_subprocess", "test_pty", "test_socket", "test_venv",
	"test_runpy", "test_mmap", "test_mimetypes", "test_uuid", "test_pickle", "test_importlib",
	"test.test_asyncio.test_events", "test.test_asyncio.test_subprocess", "test.test_asyncio.test_unix_events",
	"test.test_asyncio.test_streams",
}

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
// two at a time, each in its own jail, cold or warm as the test mode
// says.
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
		for _, m := range cpythonModules {
			t.Run(m, func(t *testing.T) {
				t.Parallel()
				fs := runCPythonModule(t, program, m)
				mu.Lock()
				failures = append(failures, fs...)
				mu.Unlock()
			})
		}
	})
	if t.Failed() {
		return // a module that did not run leaves its entries unmatched
	}
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
			t.Errorf("a new failure in a jail: %s (%s) %s", f.id, f.kind, f.msg)
		}
	}
	for i, e := range expected {
		if !matched[i] {
			t.Errorf("expected_failures.txt:%d: %s no longer fails in a jail: take it out (it said: %s)", e.line, e.pattern, e.reason)
		}
	}
	t.Logf("%d failures, each expected (%d entries)", len(failures), len(expected))
}
