package main

// Issue 31 item 1: one tests file, the same verdicts on every path a
// caller can take: `agentjail run` without a daemon and through one,
// `agentjail session run`, the daemon's HTTP API as the file is, and the
// Python client's run and session.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

// verdictsTestsFile has a case of each kind: only expected, only
// expected_type, only expected_exception, no expectation at all, an
// explicit "expected": null (expects None), kwargs only, args absent; and
// two that fail.
const verdictsTestsFile = `{"function": "f", "cases": [
  {"name": "value", "args": [1], "expected": 2},
  {"name": "type", "args": [1], "expected_type": "int"},
  {"name": "raises", "args": [0], "expected_exception": "ZeroDivisionError"},
  {"name": "no check", "args": [5]},
  {"name": "none", "args": [-1], "expected": null},
  {"name": "kwargs", "kwargs": {"x": 1}, "expected": 2},
  {"name": "no args", "expected_type": "int"},
  {"name": "wrong value", "args": [1], "expected": 3},
  {"name": "not none", "args": [1], "expected": null}
]}
`

const verdictsProgram = `def f(x=7):
    if x == -1:
        return None
    return x + 1 if x else 1 // x
`

// caseVerdict is what a path reports of one case.
type caseVerdict struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail"`
	Output string `json:"output"`
}

// verdictsOf reads the tests' verdicts from a result's JSON.
func verdictsOf(t *testing.T, path, out string) []caseVerdict {
	t.Helper()
	var res struct {
		Tests *struct{ Results []caseVerdict } `json:"tests"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res), "%s: %s", path, out)
	require.NotNil(t, res.Tests, "%s: no tests in %s", path, out)
	return res.Tests.Results
}

func TestTestVerdictsSameOnEveryPath(t *testing.T) {
	jailHost(t)
	systest.Require(t, systest.Seccomp)
	d := startDaemon(t, t.TempDir(), "[peers]\nuids = [0]\n")
	dir := t.TempDir()
	testsPath, prog := filepath.Join(dir, "t.json"), filepath.Join(dir, "func.py")
	require.NoError(t, os.WriteFile(testsPath, []byte(verdictsTestsFile), 0o644))
	require.NoError(t, os.WriteFile(prog, []byte(verdictsProgram), 0o644))

	got := map[string][]caseVerdict{}
	t.Setenv("AGENTJAIL_SOCKET", "")
	code, stdout, stderr := bin(t, "", "run", "--tests", testsPath, "--json", prog)
	require.Equal(t, 0, code, stderr)
	got["agentjail run"] = verdictsOf(t, "local", stdout)

	// Through the daemon, as the issue ran it: AGENTJAIL_SOCKET set.
	t.Setenv("AGENTJAIL_SOCKET", d.sock)
	code, stdout, stderr = bin(t, "", "run", "--tests", testsPath, "--json", prog)
	require.Equal(t, 0, code, stderr)
	got["agentjail run via socket"] = verdictsOf(t, "socket", stdout)
	code, _, stderr = bin(t, "", "run", "--tests", testsPath, prog)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "agentjail: PASS raises: OK\n")
	assert.Contains(t, stderr, "agentjail: PASS no check: OK\n")
	assert.Contains(t, stderr, "agentjail: tests 7/9 passed\n")

	code, stdout, stderr = bin(t, "", "session", "start")
	require.Equal(t, 0, code, stderr)
	id := strings.TrimSpace(stdout)
	code, stdout, stderr = bin(t, "", "session", "run", id, "--tests", testsPath, "--json", prog)
	require.Equal(t, 0, code, stderr)
	got["agentjail session run"] = verdictsOf(t, "session", stdout)
	code, _, _ = bin(t, "", "session", "end", id)
	assert.Equal(t, 0, code)

	// The HTTP API, the file's bytes as they are.
	body := `{"code": ` + string(mustJSON(t, verdictsProgram)) + `, "tests": ` + verdictsTestsFile + `}`
	resp, err := d.client().Post("http://agentjail/v1/run", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	var raw bytes.Buffer
	_, _ = raw.ReadFrom(resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, raw.String())
	got["POST /v1/run"] = verdictsOf(t, "http", raw.String())

	for path, v := range pythonClientVerdicts(t, d.sock, testsPath, prog) {
		got[path] = v
	}

	want := got["POST /v1/run"]
	require.Len(t, want, 9)
	for i, passed := range []bool{true, true, true, true, true, true, true, false, false} {
		assert.Equal(t, passed, want[i].Passed, "%+v", want[i])
	}
	assert.Equal(t, "expected null, got 2", want[8].Detail, "null expects None")
	require.Len(t, got, 6)
	for path, v := range got {
		assert.Equal(t, want, v, "%s gives other verdicts than the HTTP API", path)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// pythonClientVerdicts runs the program with the tests file through the
// Python client (clients/python), a run and a session's call.
func pythonClientVerdicts(t *testing.T, sock, testsPath, prog string) map[string][]caseVerdict {
	t.Helper()
	root, err := filepath.Abs("../../clients/python")
	require.NoError(t, err)
	const script = `
import json, sys
import agentjail
sock, tests_path, prog = sys.argv[1:]
tests = json.load(open(tests_path))
code = open(prog).read()
client = agentjail.Client(sock)
def verdicts(r):
    return [dict(name=c.name, passed=c.passed, detail=c.detail, output=c.output) for c in r.tests.results]
out = {"Client.run": verdicts(client.run(code, tests=tests))}
with client.session() as s:
    out["Session.run"] = verdicts(s.run(code, tests=tests))
json.dump(out, sys.stdout)
`
	cmd := exec.Command("/usr/bin/python3", "-c", script, sock, testsPath, prog)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+root)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	var got map[string][]caseVerdict
	require.NoError(t, json.Unmarshal(out, &got), string(out))
	return map[string][]caseVerdict{"Python Client.run": got["Client.run"], "Python Session.run": got["Session.run"]}
}
