package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
	"agentjail/nsjail"
)

// The test binary doubles as the jail's init stage, like the real one: C
// that runs before the Go runtime (nsjail/boot/bootstrap_linux.c, which main.go imports), so the
// IsInit check is only what a binary built without cgo reaches.
func TestMain(m *testing.M) {
	if nsjail.IsInit() {
		nsjail.Init()
	}
	if os.Getenv("AGENTJAIL_TEST_MAIN") == "1" { // the real command, for tests of `serve` as a process
		os.Exit(dispatch(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = dispatch(args, strings.NewReader(stdin), &o, &e)
	return code, o.String(), e.String()
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{},
		{"nope"},
		{"run"},
		{"run", "--bogus", "-c", "pass"},
		{"run", "--memory", "0", "-c", "pass"},
		{"run", "--memory", "-5MiB", "-c", "pass"},
		{"run", "--memory", "10XB", "-c", "pass"},
		{"run", "--memory", "1MiB", "-c", "pass"},
		{"run", "--timeout", "soon", "-c", "pass"},
		{"run", "--pids", "0", "-c", "pass"},
		{"run", "--file", "../x=/etc/hostname", "-c", "pass"},
		{"run", "--file", "/abs=/etc/hostname", "-c", "pass"},
		{"run", "--file", "x=" + filepath.Join(dir, "missing"), "-c", "pass"},
		{"run", filepath.Join(dir, "missing.py")},
		{"run", "--python", "/no/such/python3", "-c", "pass"},
		{"run", "-c", "pass", "extra.py"},
		{"check", "extra"},
		{"serve", "--socket", "rel.sock"},
		{"serve", "--socket", "/tmp/x/../y.sock"},
		{"serve", "--socket", "/" + strings.Repeat("s", 95)},
	} {
		code, stdout, stderr := run(t, "", args...)
		assert.Equal(t, exitUsage, code, "%q: %s", args, stderr)
		assert.Empty(t, stdout, "%q", args)
		assert.NotEmpty(t, stderr, "%q must say what is wrong", args)
	}
}

func TestVersion(t *testing.T) {
	code, stdout, _ := run(t, "", "version")
	assert.Equal(t, 0, code)
	assert.Regexp(t, `^agentjail \S+\n$`, stdout)
}

// dur matches a duration of the summary line (harness.Duration): "850 ms",
// or "1.5 s" from a second on, as a slow (emulated) machine takes.
const dur = `(\d+ ms|\d+\.\d s)`

func TestRunExitStatuses(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python)
	code, stdout, stderr := run(t, "", "run", "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)")
	assert.Equal(t, 3, code)
	assert.Equal(t, "out\n", stdout)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	require.Len(t, lines, 2)
	assert.Equal(t, "err", lines[0])
	assert.Regexp(t, `^agentjail: exit 3 · wall `+dur+` · cpu `+dur+` · peak \d+\.\d MiB$`, lines[1])

	code, _, stderr = run(t, "", "run", "--timeout", "300ms", "-c", "import time; time.sleep(10)")
	assert.Equal(t, 137, code)
	assert.Contains(t, stderr, "agentjail: killed (wall_timeout) · wall ")

	code, _, stderr = run(t, "", "run", "--memory", "32MiB", "-c", "x = b'x' * (100 << 20)")
	assert.Equal(t, 137, code)
	assert.Regexp(t, `killed \(memory_limit\) · .* · peak \d+\.\d MiB of 32\.0 MiB`, stderr)

	// A real fault: kill(getpid(), SIGSEGV) from PID 1 of a pid namespace
	// is dropped by the kernel when no handler is installed.
	code, _, stderr = run(t, "", "run", "-c", "import ctypes; ctypes.string_at(0)")
	assert.Equal(t, 128+11, code)
	assert.Contains(t, stderr, "agentjail: signal SIGSEGV")
}

func TestRunJSON(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python)
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog.py")
	require.NoError(t, os.WriteFile(prog, []byte("import sys\nprint(sys.stdin.read(), open('in/data.txt').read())\n1/0\n"), 0o644))
	data := filepath.Join(dir, "data.txt")
	require.NoError(t, os.WriteFile(data, []byte("DATA"), 0o644))
	code, stdout, stderr := run(t, "STDIN", "run", prog, "--json", "--stdin", "-", "--file", "in/data.txt="+data)
	assert.Equal(t, 1, code, stderr)
	assert.Empty(t, stderr, "with --json nothing but the result is printed")
	var res map[string]any
	dec := json.NewDecoder(strings.NewReader(stdout))
	require.NoError(t, dec.Decode(&res))
	assert.False(t, dec.More(), "exactly one JSON object")
	assert.Equal(t, "error", res["status"])
	assert.Equal(t, float64(1), res["exit_code"])
	assert.Equal(t, "STDIN DATA\n", res["stdout"])
	assert.Contains(t, res["stderr"], `File "/code/main.py", line 3`)
	for _, k := range []string{"id", "signal", "kill_reason", "seccomp", "stdout_truncated", "stderr_truncated", "wall_time_ms", "cpu_time_ms",
		"peak_memory_bytes", "memory_limit_bytes", "exception", "tests", "feedback", "files"} {
		assert.Contains(t, res, k)
	}
	assert.Equal(t, float64(256<<20), res["memory_limit_bytes"])

	// The program from stdin.
	code, stdout, _ = run(t, "print('from stdin')", "run", "-")
	assert.Equal(t, 0, code)
	assert.Equal(t, "from stdin\n", stdout)
}

func TestCheck(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python)
	code, stdout, _ := run(t, "", "check", "--json")
	require.Equal(t, 0, code, stdout)
	var rep checkReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	assert.True(t, rep.OK)
	assert.Contains(t, []string{"v1", "v2"}, rep.Cgroup)
	for _, c := range []string{"memory", "pids", "cpu"} {
		assert.Contains(t, rep.Controllers, c)
	}
	names := map[string]bool{}
	for _, c := range rep.Checks {
		names[c.Name] = true
		assert.True(t, c.OK, "%s: %s", c.Name, c.Detail)
	}
	for _, n := range []string{"root", "user namespaces", "cgroups", "peak memory", "seccomp", "python", "trial run"} {
		assert.True(t, names[n], "check %q is reported", n)
	}
	code, stdout, _ = run(t, "", "check")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "this host can run jails")

	// A missing interpreter is named, with a failing exit status.
	code, stdout, _ = run(t, "", "check", "--python", "/no/such/python3")
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "FAIL python")

	// Each environment of the configuration: its python's version, its
	// preload and numpy imported in a trial jail of it, its mounts checked
	// as the daemon checks them; what fails says why.
	cfg := filepath.Join(t.TempDir(), "config.toml")
	require.NoError(t, os.WriteFile(cfg, []byte("[environments.extra]\npreload = [\"json\", \"no_such_module_aj\"]\n[environments.bad]\nread_only_mounts = [\"/home\"]\n"), 0o644))
	code, stdout, _ = run(t, "", "check", "--json", "--config", cfg)
	assert.Equal(t, 1, code, stdout)
	rep = checkReport{}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	assert.Equal(t, cfg, rep.Config)
	envs := map[string]environmentCheck{}
	for _, e := range rep.Environments {
		envs[e.Name] = e
	}
	require.Len(t, envs, 3)
	assert.Regexp(t, `^3\.\d+\.\d+$`, envs["default"].PythonVersion)
	assert.Empty(t, envs["default"].Error)
	assert.Contains(t, envs["default"].Imports, "numpy")
	assert.Equal(t, "", envs["extra"].Imports["json"])
	assert.Equal(t, "ModuleNotFoundError: No module named 'no_such_module_aj'", envs["extra"].Imports["no_such_module_aj"])
	assert.Contains(t, envs["bad"].Error, `environments.bad.read_only_mounts[0]: "/home": is or lies below /home`)
	code, stdout, _ = run(t, "", "check", "--config", cfg)
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "FAIL environment extra")
	assert.Contains(t, stdout, `preload "no_such_module_aj" does not import`)
	assert.Contains(t, stdout, "this host can run jails, but not every environment works")
}

// TestRunTestsAndCollect: --tests and --collect from the command line, in
// local mode; the verdicts and files come back in the JSON result, and a
// person sees PASS/FAIL lines.
func TestRunTestsAndCollect(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python)
	dir := t.TempDir()
	tests := filepath.Join(dir, "tests.json")
	require.NoError(t, os.WriteFile(tests, []byte(`{"function":"sq","cases":[{"name":"two","args":[2],"expected":4},{"name":"neg","args":[-3],"expected":9}]}`), 0o644))
	prog := "def sq(x):\n    return x * 2\nopen('out.txt', 'w').write('done')\n"
	code, stdout, stderr := run(t, "", "run", "--tests", tests, "--collect", "out.txt", "--json", "-c", prog)
	assert.Equal(t, 0, code, stderr)
	var res struct {
		Tests struct {
			Passed, Total int
			Results       []struct {
				Name   string
				Passed bool
			}
		}
		Files []struct{ Path, Content string }
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &res), stdout)
	assert.Equal(t, 1, res.Tests.Passed)
	assert.Equal(t, 2, res.Tests.Total)
	require.Len(t, res.Files, 1)
	assert.Equal(t, "done", res.Files[0].Content)

	_, _, stderr = run(t, "", "run", "--tests", tests, "-c", prog)
	assert.Contains(t, stderr, "agentjail: PASS two")
	assert.Contains(t, stderr, "agentjail: FAIL neg")
	assert.Contains(t, stderr, "agentjail: tests 1/2 passed")

	require.NoError(t, os.WriteFile(tests, []byte(`{"function":"sq","cases":[{"name":"x","args":[1],"expected_type":"int","expected_exception":"E"}]}`), 0o644))
	code, _, stderr = run(t, "", "run", "--tests", tests, "-c", prog)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "--tests")
}

// TestRunDropsCallerGroups: the caller's supplementary groups are kernel
// gids that would still open group-readable host files from inside (the
// jail sees them as 65534). The bootstrap drops them before the user
// namespace exists.
func TestRunDropsCallerGroups(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python)
	cmd := exec.Command("/proc/self/exe", "run", "-c", `import os; print(os.getgroups(), open("/proc/self/status").read().split("Groups:")[1].split("\n")[0].split())`)
	cmd.Env = append(os.Environ(), "AGENTJAIL_TEST_MAIN=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{0, 4, 27}}}
	out, err := cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, "[] []\n", string(out))
}
