package main

// Issue 22's "The CLI" and issue 21 item 6, as a user meets them: each
// test runs the binary (this test binary as the real command, see
// TestMain) with its own stdout and stderr.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/daemon"
	"agentjail/internal/systest"
	"agentjail/nsjail"
)

// bin runs the command as a process; stdin is its stdin.
func bin(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := binCmd(stdin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	return exitCode(t, cmd.Run()), o.String(), e.String()
}

// binCombined runs the command with stdout and stderr on one pipe, as a
// terminal shows them.
func binCombined(t *testing.T, args ...string) (code int, out string) {
	t.Helper()
	b, err := binCmd("", args...).CombinedOutput()
	return exitCode(t, err), string(b)
}

func binCmd(stdin string, args ...string) *exec.Cmd {
	cmd := exec.Command("/proc/self/exe", args...)
	cmd.Env = append(os.Environ(), "AGENTJAIL_TEST_MAIN=1")
	cmd.Stdin = strings.NewReader(stdin)
	return cmd
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	require.NoError(t, err)
	return 0
}

func jailHost(t *testing.T) {
	t.Helper()
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python)
	// On cgroup v2, `agentjail run` needs a cgroup whose only processes are
	// its own: opening a runner here moves this test process into the leaf
	// "supervisor" of its cgroup, and the commands it starts make their
	// groups beside it (cgroup.Open), as startDaemon's daemon does.
	_, err := nsjail.NewRunner()
	require.NoError(t, err)
}

// --tests FILE gets the daemon's own messages: the field's path and the
// name meant, the shape expected, where a syntax error is or the file ends.
func TestRunTestsFileMessages(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]string{
		`{"function":"f","cases":[{"args":[1],"expect":2}]}`: `tests.cases[0].expect: unknown field; did you mean "expected"?`,
		`[{"args":[1],"expected":2}]`:                        `tests: must be an object, got JSON array`,
		"{\"function\":\"f\",\n\"cases\":[{\"args\":[1]":     `tests: incomplete JSON: it ends at byte 37 (line 2) before the object does`,
		"{\"function\":\"f\",\n\"cases\":[}":                 `tests: invalid JSON at byte 27 (line 2, column 10): invalid character '}'`,
		`{"function":"f","cases":[]}`:                        `--tests: tests.cases: must have at least one case`,
	} {
		f := filepath.Join(dir, "tests.json")
		require.NoError(t, os.WriteFile(f, []byte(content), 0o644))
		code, stdout, stderr := bin(t, "", "run", "--tests", f, "-c", "pass")
		assert.Equal(t, exitUsage, code, content)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, "agentjail run: --tests", content)
		assert.Contains(t, stderr, want, content)
		assert.NotContains(t, stderr, "Go value", "not encoding/json's own message")
		assert.NotContains(t, stderr, "json: unknown field", "not encoding/json's own message")
	}
}

// A flag's value that looks like a flag is a usage error that says so;
// --flag=VALUE gives such a value on purpose. A negative number is left to
// the flag's own check.
func TestRunFlagValueLooksLikeFlag(t *testing.T) {
	for args, want := range map[string]string{
		"--collect -c pass":      `--collect: its value "-c" looks like a flag, so --collect was probably given no value; if "-c" is the value, write --collect=-c`,
		"--tests --json -c pass": `--tests: its value "--json" looks like a flag`,
		"-c --memory 1MiB":       `-c: its value "--memory" looks like a flag`,
		"--memory -5MiB -c pass": `--memory: "-5MiB" must be a positive size`,
		"-c pass --timeout":      `--timeout needs a value: DURATION`,
		"--json=maybe -c pass":   `--json: "maybe": want true or false`,
		"--nope -c pass":         `unknown flag --nope (agentjail run --help lists them)`,
	} {
		code, stdout, stderr := bin(t, "", append([]string{"run"}, strings.Fields(args)...)...)
		assert.Equal(t, exitUsage, code, args)
		assert.Empty(t, stdout, args)
		assert.Contains(t, stderr, want, args)
	}
	// On purpose: the = form, and "-" (stdin) as a value or the program.
	_, _, err := parseRun([]string{"--collect=-c", "--json", "-c", "pass", "--", "--"}, strings.NewReader(""), &bytes.Buffer{})
	require.ErrorContains(t, err, `give either -c CODE or a program file, not both (got "--")`, "after --, \"--\" is the program")
	ra, _, err := parseRun([]string{"--collect=-c", "--stdin", "-", "--json=false", "-c", "pass"}, strings.NewReader("in"), &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, []string{"-c"}, ra.req.Collect)
	assert.Equal(t, "in", *ra.req.Stdin)
	assert.False(t, ra.json)
	_, _, err = parseRun([]string{"--", "-prog.py"}, strings.NewReader(""), &bytes.Buffer{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "read program: open -prog.py", "after --, a name that starts with - is the program")
}

// A socket with no daemon says what the Python client says, and what to
// do; exit 125, and --json gives the error object.
func TestRunNoDaemon(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.sock")
	code, stdout, stderr := bin(t, "", "run", "--socket", missing, "-c", "pass")
	assert.Equal(t, exitSetup, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "agentjail: no agentjail daemon socket at "+missing+": is `agentjail serve` running? Start it, or point --socket (or AGENTJAIL_SOCKET) at its socket\n", stderr)

	code, stdout, _ = bin(t, "", "run", "--socket", missing, "--json", "-c", "pass")
	assert.Equal(t, exitSetup, code)
	var e struct {
		Error struct{ Code, Message string }
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &e), stdout)
	assert.Equal(t, "setup_failed", e.Error.Code)
	assert.Contains(t, e.Error.Message, "agentjail serve")

	// A stale socket: the file is there, nobody listens.
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.Listen("unix", stale)
	require.NoError(t, err)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	_, _, stderr = bin(t, "", "run", "--socket", stale, "-c", "pass")
	assert.Contains(t, stderr, "refused the connection at "+stale+" (a stale socket: the daemon is not running; start `agentjail serve`)")

	// Not a socket at all.
	plain := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(plain, nil, 0o644))
	_, _, stderr = bin(t, "", "run", "--socket", plain, "-c", "pass")
	assert.Contains(t, stderr, plain+" is not a Unix socket")
}

// run --help shows each limit's default and where defaults come from, and
// the exit statuses; on stdout, exit 0.
func TestRunHelpShowsDefaults(t *testing.T) {
	code, stdout, stderr := bin(t, "", "run", "--help")
	assert.Equal(t, 0, code)
	assert.Empty(t, stderr)
	for _, l := range limitFlags() {
		assert.Regexp(t, `(?m)^  --`+l.Flag+` (SIZE|DURATION|COUNT) \(default \w+\)\n        `+l.Key+`: `, stdout)
	}
	for _, want := range []string{"(default 256MiB)", "(default 10s)", "(default 64)", "(default 1MiB)", "(default 64MiB)", "(default 32MiB)",
		"the daemon's configured defaults ([limits.default]", "--fail-on-test-failure", "--collect-dir DIR", "--overwrite", "125 ", "--collect=-x.txt"} {
		assert.Contains(t, stdout, want)
	}
	_, stdout, _ = bin(t, "", "run", "-h")
	assert.Contains(t, stdout, "usage: agentjail run")
	t.Setenv("AGENTJAIL_SOCKET", "/run/x.sock")
	_, stdout, _ = bin(t, "", "run", "--help")
	assert.Contains(t, stdout, "AGENTJAIL_SOCKET is set: without --socket, runs go to the daemon on /run/x.sock.")
}

// The summary starts on its own line when the program's output does not
// end with a newline; the program's own bytes are not changed.
func TestRunSummaryOnItsOwnLine(t *testing.T) {
	jailHost(t)
	code, out := binCombined(t, "run", "-c", "import sys; sys.stdout.write('no newline')")
	assert.Equal(t, 0, code)
	assert.Regexp(t, `^no newline\nagentjail: exit 0 · `, out)
	_, out = binCombined(t, "run", "-c", "import sys; print('out'); sys.stderr.write('err')")
	assert.Regexp(t, `^out\nerr\nagentjail: exit 0 · `, out)
	_, out = binCombined(t, "run", "-c", "print('done')")
	assert.Regexp(t, `^done\nagentjail: exit 0 · `, out, "no blank line after a whole line")

	_, stdout, stderr := bin(t, "", "run", "-c", "import sys; sys.stdout.write('no newline')")
	assert.Equal(t, "no newline", stdout, "stdout holds exactly what the program wrote")
	assert.Regexp(t, `^agentjail: exit 0 `, stderr, "stdout is a file apart from stderr: no newline needed there")
}

// --fail-on-test-failure: a failed test makes the exit status 1 when the
// program exited 0; without the flag, the status is the program's.
func TestRunFailOnTestFailure(t *testing.T) {
	jailHost(t)
	tests := filepath.Join(t.TempDir(), "tests.json")
	require.NoError(t, os.WriteFile(tests, []byte(`{"function":"sq","cases":[{"args":[2],"expected":4},{"args":[3],"expected":9}]}`), 0o644))
	wrong := "def sq(x):\n    return x * 2\n"
	code, _, stderr := bin(t, "", "run", "--tests", tests, "-c", wrong)
	assert.Equal(t, 0, code, "the program's status: %s", stderr)
	assert.Contains(t, stderr, "agentjail: tests 1/2 passed")
	code, _, _ = bin(t, "", "run", "--tests", tests, "--fail-on-test-failure", "-c", wrong)
	assert.Equal(t, 1, code)
	code, stdout, _ := bin(t, "", "run", "--tests", tests, "--fail-on-test-failure", "--json", "-c", wrong)
	assert.Equal(t, 1, code, "with --json too")
	assert.Contains(t, stdout, `"all_passed":false`)
	code, _, _ = bin(t, "", "run", "--tests", tests, "--fail-on-test-failure", "-c", "def sq(x):\n    return x * x\n")
	assert.Equal(t, 0, code, "every test passed")
	code, _, _ = bin(t, "", "run", "--tests", tests, "--fail-on-test-failure", "-c", "import sys\ndef sq(x):\n    return x * 2\nsys.exit(3)")
	assert.Equal(t, 3, code, "the program's own failure stands")
}

// --collect-dir writes the collected files below DIR, nested directories
// made, the exact names kept; nothing is followed out of DIR, and with
// --overwrite a file is replaced, not written through a hard link. (A DIR
// that holds anything needs --overwrite: TestRunCollectDirRerun.)
func TestRunCollectDir(t *testing.T) {
	jailHost(t)
	dir := filepath.Join(t.TempDir(), "out")
	outside := t.TempDir()
	prog := `import os
os.makedirs("d/e"); os.makedirs("link")
open("d/e/f.txt", "w").write("nested")
open(b"bad\xffname", "wb").write(b"\x00\x01\xff")
open("link/x", "w").write("through a link")
open("top.txt", "w").write("top")
`
	args := []string{"run", "--overwrite", "--collect", "d/e/*", "--collect", "bad*", "--collect", "link/x", "--collect", "top.txt", "--collect-dir", dir, "-c", prog}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link")))
	code, _, stderr := bin(t, "", args...)
	assert.Equal(t, exitSetup, code, "a file not written: %s", stderr)
	assert.Contains(t, stderr, "agentjail: collected d/e/f.txt (6 B) → "+dir+"/d/e/f.txt")
	assert.Contains(t, stderr, `agentjail: collected "bad\xffname" (3 B) → `)
	assert.Contains(t, stderr, "agentjail: collected link/x (14 B), not written: "+dir+"/link/x: link is a symbolic link, which is never followed")
	b, err := os.ReadFile(filepath.Join(dir, "d/e/f.txt"))
	require.NoError(t, err)
	assert.Equal(t, "nested", string(b))
	b, err = os.ReadFile(filepath.Join(dir, "bad\xffname"))
	require.NoError(t, err, "the exact name")
	assert.Equal(t, "\x00\x01\xff", string(b), "the exact bytes")
	ents, _ := os.ReadDir(outside)
	assert.Empty(t, ents, "nothing written through the link")
	st, err := os.Stat(filepath.Join(dir, "top.txt"))
	require.NoError(t, err)
	assert.Zero(t, st.Mode().Perm()&0o111, "nothing the program wrote is executable: %v", st.Mode())

	// Again: --overwrite replaces the files, and a hard link's other name
	// keeps its bytes.
	require.NoError(t, os.Remove(filepath.Join(dir, "link")))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "victim"), []byte("keep"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "top.txt")))
	require.NoError(t, os.Link(filepath.Join(outside, "victim"), filepath.Join(dir, "top.txt")))
	code, _, stderr = bin(t, "", args...)
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "agentjail: collected link/x (14 B) → ", "a real directory this time")
	b, _ = os.ReadFile(filepath.Join(dir, "top.txt"))
	assert.Equal(t, "top", string(b))
	b, _ = os.ReadFile(filepath.Join(outside, "victim"))
	assert.Equal(t, "keep", string(b), "the hard link's target was not written through")
	ents, _ = os.ReadDir(dir)
	for _, e := range ents {
		assert.False(t, strings.HasPrefix(e.Name(), ".agentjail-"), "no temporary file left: %s", e.Name())
	}

	// With --json: the one object on stdout, the failure on stderr.
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "d/e")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "d/e")))
	code, stdout, stderr := bin(t, "", append([]string{"run", "--json"}, args[1:]...)...)
	assert.Equal(t, exitSetup, code)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	assert.Contains(t, stderr, "agentjail: --collect-dir: not written: "+dir+"/d/e/f.txt: e is a symbolic link")
	ents, _ = os.ReadDir(outside)
	assert.Len(t, ents, 1, "only victim: nothing written through the link")
}

// A --collect-dir that holds anything, without --overwrite (a rerun into
// the same DIR), is a usage error before anything runs (exit 2, no jail),
// which says what to do; so is a DIR that is a file. An empty DIR is
// fine, and a file that cannot be written is still reported after the
// run (TestWriteCollectedStaysInDir).
func TestRunCollectDirRerun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "out.txt"), []byte("first run"), 0o644))
	prog := "open('out.txt', 'w').write('second run')"
	for _, mode := range []string{"--json=false", "--json"} {
		code, stdout, stderr := bin(t, "", "run", mode, "--collect", "out.txt", "--collect-dir", dir, "-c", prog)
		assert.Equal(t, exitUsage, code, stderr)
		assert.Empty(t, stdout)
		assert.Equal(t, "agentjail run: --collect-dir "+dir+": the directory is not empty (it holds out.txt): pass --overwrite to replace the files this run collects (others are left as they are), or pick another DIR; nothing was run\n", stderr)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "out.txt"))
	assert.Equal(t, "first run", string(b))
	// Through a daemon too, checked before the request is sent.
	code, _, stderr := bin(t, "", "run", "--socket", filepath.Join(dir, "no.sock"), "--collect", "x", "--collect-dir", dir, "-c", prog)
	assert.Equal(t, exitUsage, code, stderr)
	assert.Contains(t, stderr, "pass --overwrite")

	file := filepath.Join(dir, "out.txt")
	code, _, stderr = bin(t, "", "run", "--overwrite", "--collect", "x", "--collect-dir", file, "-c", prog)
	assert.Equal(t, exitUsage, code, stderr)
	assert.Contains(t, stderr, "agentjail run: --collect-dir "+file+": it exists and is not a directory; pick another DIR")

	_, _, err := parseRun([]string{"--collect", "x", "--collect-dir", t.TempDir(), "-c", prog}, strings.NewReader(""), &bytes.Buffer{})
	require.NoError(t, err, "an empty DIR")
	_, _, err = parseRun([]string{"--collect", "x", "--collect-dir", filepath.Join(dir, "new"), "-c", prog}, strings.NewReader(""), &bytes.Buffer{})
	require.NoError(t, err, "a missing DIR")
	_, _, err = parseRun([]string{"--overwrite", "--collect", "x", "--collect-dir", dir, "-c", prog}, strings.NewReader(""), &bytes.Buffer{})
	require.NoError(t, err, "--overwrite")
}

// The paths of a result never leave DIR, whatever they say.
func TestWriteCollectedStaysInDir(t *testing.T) {
	dir := t.TempDir()
	c := func(s string) *string { return &s }
	files := []daemon.ResultFile{
		{Path: "../escape", Content: c("x")}, {Path: "/abs", Content: c("x")}, {Path: "a//b", Content: c("x")},
		{Path: "a/./b", Content: c("x")}, {Path: "", Content: c("x")}, {Path: "gone", Error: "no such file"},
		{Path: "ok/file", Content: c("AAE="), Encoding: "base64"},
	}
	writes := writeCollected(dir, files, false)
	require.Len(t, writes, 6, "entries with an error are not written")
	for _, w := range writes[:5] {
		require.Error(t, w.err, files[w.index].Path)
		assert.Contains(t, w.err.Error(), "would leave the directory")
	}
	require.NoError(t, writes[5].err)
	b, err := os.ReadFile(filepath.Join(dir, "ok/file"))
	require.NoError(t, err)
	assert.Equal(t, "\x00\x01", string(b))
	again := writeCollected(dir, files[6:], false)
	require.Len(t, again, 1)
	assert.ErrorContains(t, again[0].err, "ok/file: it exists (--overwrite replaces it)", "a file made since the check before the run")
	ents, _ := os.ReadDir(filepath.Dir(dir))
	for _, e := range ents {
		assert.NotEqual(t, "escape", e.Name())
	}
}

// Issue 21 item 6: the exact bytes of output that is not UTF-8, printed
// as the program wrote them in both modes, and in --json as a base64 twin
// of the text; a collected file's name likewise.
func TestRunExactBytes(t *testing.T) {
	jailHost(t)
	systest.Require(t, systest.Seccomp)
	d := startDaemon(t, t.TempDir(), "[peers]\nuids = [0]\n")
	prog := `import os
os.write(1, b"\xff\xfe abc \x80")
os.write(2, b"err \xc3")
open(b"n\xffm", "w").write("x")`
	for _, mode := range [][]string{nil, {"--socket", d.sock}} {
		args := append(append([]string{"run"}, mode...), "--collect", "n*", "-c", prog)
		code, stdout, stderr := bin(t, "", args...)
		assert.Equal(t, 0, code, stderr)
		assert.Equal(t, "\xff\xfe abc \x80", stdout, "%v: the exact bytes", mode)
		assert.True(t, strings.HasPrefix(stderr, "err \xc3\nagentjail: collected \"n\\xffm\" (1 B;"), "%v: %q", mode, stderr)

		code, stdout, _ = bin(t, "", append(args[:len(args)-2], "--json", "-c", prog)...)
		assert.Equal(t, 0, code)
		var res map[string]any
		require.NoError(t, json.Unmarshal([]byte(stdout), &res), stdout)
		assert.Equal(t, "\ufffd\ufffd abc \ufffd", res["stdout"])
		assert.Equal(t, base64.StdEncoding.EncodeToString([]byte("\xff\xfe abc \x80")), res["stdout_base64"])
		assert.Equal(t, base64.StdEncoding.EncodeToString([]byte("err \xc3")), res["stderr_base64"])
		f := res["files"].([]any)[0].(map[string]any)
		assert.Equal(t, "n\ufffdm", f["path"])
		assert.Equal(t, base64.StdEncoding.EncodeToString([]byte("n\xffm")), f["path_base64"])
		got, err := daemon.DecodeResult([]byte(stdout))
		require.NoError(t, err)
		assert.Equal(t, "n\xffm", got.Files[0].Path)

		// Valid UTF-8: no twin.
		_, stdout, _ = bin(t, "", append(append([]string{"run"}, mode...), "--json", "-c", "print('ü')")...)
		assert.Contains(t, stdout, `"stdout":"ü\n"`)
		assert.NotContains(t, stdout, "_base64")
	}
	// Through the daemon, --json prints the daemon's object as it came.
	_, stdout, _ := bin(t, "", "run", "--socket", d.sock, "--json", "-c", "print(1)")
	assert.True(t, strings.HasPrefix(stdout, `{"stdout":"1\n","stderr":"","files":[],"id":"j-`), stdout)
	assert.True(t, strings.HasSuffix(stdout, "}\n"))
}

// A full /workspace names its limit and flag; a name no run defined says
// runs share no state.
func TestRunFeedbackFullWorkspaceAndNameError(t *testing.T) {
	jailHost(t)
	code, _, stderr := bin(t, "", "run", "--tmp-size", "256KiB", "-c", "open('big', 'wb').write(b'x' * (1 << 20))")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "agentjail: The program raised OSError at line 1: [Errno 28] No space left on device")
	assert.Contains(t, stderr, "tmp_bytes limit (--tmp-size on the command line)")

	code, _, stderr = bin(t, "", "run", "-c", "print(df.head())")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "Runs share no state")
	assert.Contains(t, stderr, "client.session()")
}
