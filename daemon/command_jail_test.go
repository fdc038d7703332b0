package daemon

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runCommand posts a run of argv (with more of the request's fields) and
// decodes the result.
func runCommand(t *testing.T, c *http.Client, argv []string, more string) *Result {
	t.Helper()
	a, err := json.Marshal(argv)
	require.NoError(t, err)
	resp, body := post(t, c, fmt.Sprintf(`{"command":%s%s}`, a, more))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	res, err := DecodeResult(body)
	require.NoError(t, err, string(body))
	return res
}

func TestCommandRun(t *testing.T) {
	_, _, c := startServer(t, testOptions(), realRunner(t))

	res := runCommand(t, c, []string{"bash", "-c", "echo out; echo err >&2; pwd; exit 3"}, "")
	assert.Equal(t, "error", res.Status)
	assert.Equal(t, 3, res.ExitCode)
	assert.Equal(t, "out\n/workspace\n", res.Stdout)
	assert.Equal(t, "err\n", res.Stderr)
	assert.Equal(t, "cold", res.Start)
	require.NotNil(t, res.PeakMemoryBytes)
	assert.Positive(t, *res.PeakMemoryBytes)

	res = runCommand(t, c, []string{"ls", "/usr/bin/python3"}, `,"start":"warm"`)
	assert.Equal(t, "ok", res.Status, res.Stderr)
	assert.Equal(t, "/usr/bin/python3\n", res.Stdout)
	assert.Equal(t, "cold", res.Start, "a command has no warm interpreter")
	assert.Empty(t, res.Feedback)
}

func TestCommandMissingProgram(t *testing.T) {
	_, _, c := startServer(t, testOptions(), realRunner(t))
	res := runCommand(t, c, []string{"no-such-program-here", "-x"}, "")
	assert.Equal(t, "error", res.Status)
	assert.Equal(t, 127, res.ExitCode)
	require.NotEmpty(t, res.Feedback)
	assert.Contains(t, res.Feedback[0], "the program 'no-such-program-here' is not installed in environment 'default'")
	assert.Contains(t, res.Stderr, "no-such-program-here: command not found")

	// A program that exits 127 itself is not called missing.
	res = runCommand(t, c, []string{"bash", "-c", "exit 127"}, "")
	assert.Equal(t, 127, res.ExitCode)
	assert.NotContains(t, strings.Join(res.Feedback, " "), "not installed")
}

func TestCommandLimits(t *testing.T) {
	_, _, c := startServer(t, testOptions(), realRunner(t))

	// bash holds a 200 MB string: above the 64 MiB limit.
	res := runCommand(t, c, []string{"bash", "-c", "x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo ${#x}"},
		`,"limits":{"memory_bytes":67108864,"wall_time_ms":10000}`)
	assert.Equal(t, "killed", res.Status, res.Stderr)
	assert.Equal(t, "memory_limit", res.KillReason)
	require.NotNil(t, res.PeakMemoryBytes)
	assert.GreaterOrEqual(t, *res.PeakMemoryBytes, int64(60<<20))

	res = runCommand(t, c, []string{"sleep", "30"}, `,"limits":{"wall_time_ms":500}`)
	assert.Equal(t, "killed", res.Status)
	assert.Equal(t, "wall_timeout", res.KillReason)
	assert.Less(t, res.WallTimeMs, 5000.0)

	res = runCommand(t, c, []string{"bash", "-c", "yes"}, `,"limits":{"output_bytes":10000}`)
	assert.Equal(t, "killed", res.Status)
	assert.Equal(t, "output_limit", res.KillReason)
}

func TestCommandFiles(t *testing.T) {
	_, _, c := startServer(t, testOptions(), realRunner(t))
	res := runCommand(t, c, []string{"bash", "-c", "wc -c < data/in.txt > out.txt; cat -"},
		`,"files":[{"path":"data/in.txt","content":"hello"}],"collect":["out.txt"],"stdin":"from stdin"`)
	assert.Equal(t, "ok", res.Status, res.Stderr)
	assert.Equal(t, "from stdin", res.Stdout)
	require.Len(t, res.Files, 1)
	assert.Equal(t, "out.txt", res.Files[0].Path)
	require.NotNil(t, res.Files[0].Content)
	assert.Equal(t, "5\n", *res.Files[0].Content)
}

func TestCommandRequestErrors(t *testing.T) {
	_, _, c := startServer(t, testOptions(), &fakeJailer{})
	for body, want := range map[string]string{
		`{"code":"pass","command":["ls"]}`: "command: give code or command, not both",
		`{}`:                               "code: is required (or command",
		`{"command":[]}`:                   "command: must be a non-empty array",
		`{"command":[""]}`:                 "command[0]: the program's name is empty",
		`{"command":["ls","a\u0000b"]}`:    "command[1]: must be UTF-8 text without NUL bytes",
		`{"command":"ls -la"}`:             "command: must be an array",
		`{"command":["ls"],"tests":{"function":"f"}}`: "tests: test a function of Python code",
	} {
		resp, b := post(t, c, body)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
		assert.Contains(t, decodeErr(t, b).Error.Message, want, body)
	}
}
