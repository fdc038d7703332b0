package scriptstest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repo is the top of the tree (this package is two levels down).
func repo(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs("../..")
	require.NoError(t, err)
	return d
}

// runSteps runs a bash script that sources scripts/ci/steps, with TMPDIR in
// a directory of the test's own.
func runSteps(t *testing.T, body string) (string, int, string) {
	t.Helper()
	tmp := t.TempDir()
	cmd := exec.Command("bash", "-c", "set -euo pipefail\n. scripts/ci/steps\nsteps_begin\n"+body+"\nsteps_end\n")
	cmd.Dir = repo(t)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return string(out), code, tmp
}

// A failing step does not stop the run: every step runs and is reported,
// with its time, and the run fails if any step did.
func TestStepsRunEveryStepAndReportEach(t *testing.T) {
	out, code, tmp := runSteps(t, `
half() { echo first half; false; echo second half; }
step "one" true
step "two halves" half
step "three" sh -c 'echo three ran'
`)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "three ran", "the step after a failure did not run")
	assert.Contains(t, out, "first half")
	assert.NotContains(t, out, "second half", "a step's commands run with errexit")
	for _, row := range []string{`one\s+pass\s+\d+`, `two halves\s+FAIL \(1\)\s+\d+`, `three\s+pass\s+\d+`} {
		assert.Regexp(t, regexp.MustCompile(`(?m)^`+row+`$`), out)
	}
	logs, err := filepath.Glob(filepath.Join(tmp, "agentjail-test.*", "*.log"))
	require.NoError(t, err)
	assert.Len(t, logs, 3, "one log a step, in this run's directory")
	b, err := os.ReadFile(filepath.Join(filepath.Dir(logs[0]), "02-three.log"))
	require.NoError(t, err)
	assert.Equal(t, "three ran\n", string(b))

	out, code, _ = runSteps(t, `step "one" true`)
	assert.Equal(t, 0, code, out)
}

// Two runs at once (two users, two checkouts) do not share a log file.
func TestTestScriptLogsPerRun(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repo(t), "scripts", "test"))
	require.NoError(t, err)
	s := string(b)
	assert.NotContains(t, s, "/tmp/agentjail-test.log")
	assert.Contains(t, s, ". scripts/ci/steps")
	assert.NotRegexp(t, `(?m)^(go |scripts/|CGO_ENABLED|AGENTJAIL_TEST)`, s, "a command outside a step stops the run when it fails")
	assert.True(t, strings.HasSuffix(strings.TrimSpace(s), "steps_end"))
}
