//go:build linux

package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"agentjail/internal/systest"
	"agentjail/nsjail"
)

// These tests run session.py on the host, without a jail: python3 -I -u on
// it in a directory laid out like /code, with a workspace of its own and a
// socketpair as fd 3, and speak nsjail/session_linux.go's protocol to it
// by hand. They check the server's side; nsjail's and the daemon's tests
// run it in jails, with the limits.

type sessionHost struct {
	t   *testing.T
	cmd *exec.Cmd
	ctl int
	ws  string
	n   int
}

// hostCall is what one call did.
type hostCall struct {
	stdout, stderr string
	report         []byte
	status         int32
	end            CallEnd
	raw            []byte
}

func startSessionHost(t *testing.T) *sessionHost {
	t.Helper()
	systest.Require(t, systest.Python)
	dir := t.TempDir()
	program, name, files := SessionProgram()
	for _, f := range append(files, nsjail.File{Path: name, Content: program}) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f.Path), f.Content, 0o444))
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	child := os.NewFile(uintptr(fds[1]), "child")
	ws := t.TempDir()
	cmd := exec.Command(python, "-I", "-u", filepath.Join(dir, name), dir, ws)
	cmd.Dir = ws
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + ws, "LANG=C.UTF-8"}
	cmd.ExtraFiles = []*os.File{child}
	var startErr strings.Builder
	cmd.Stderr = &startErr
	require.NoError(t, cmd.Start())
	child.Close()
	h := &sessionHost{t: t, cmd: cmd, ctl: fds[0], ws: ws}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		unix.Close(h.ctl)
	})
	msg := h.read()
	require.Equal(t, `{"t":"ready"}`, string(msg), startErr.String())
	return h
}

func (h *sessionHost) read() []byte {
	buf := make([]byte, 1<<18)
	n, _, _, _, err := unix.Recvmsg(h.ctl, buf, nil, 0)
	require.NoError(h.t, err)
	return buf[:n]
}

// call runs code, with tests, files and stdin ("" for /dev/null).
func (h *sessionHost) call(code string, tests *Tests, files []nsjail.File, stdin string) *hostCall {
	h.t.Helper()
	h.n++
	payload := CallPayload(CallName(h.n), []byte(code), tests, files)
	pf := memfd(h.t, payload)
	defer pf.Close()
	in, err := os.Open(os.DevNull)
	if stdin != "" {
		in = memfd(h.t, []byte(stdin))
	}
	require.NoError(h.t, err)
	defer in.Close()
	var r [3]*os.File
	var w [3]*os.File
	for i := range r {
		r[i], w[i], err = os.Pipe()
		require.NoError(h.t, err)
	}
	hdr := fmt.Sprintf(`{"t":"call","n":%d}`, h.n)
	require.NoError(h.t, unix.Sendmsg(h.ctl, []byte(hdr), unix.UnixRights(int(pf.Fd()), int(in.Fd()), int(w[0].Fd()), int(w[1].Fd()), int(w[2].Fd())), nil, 0))
	for _, f := range w {
		f.Close()
	}
	out := make([][]byte, 3)
	var wg sync.WaitGroup
	for i := range r {
		wg.Go(func() {
			out[i], _ = io.ReadAll(r[i])
			r[i].Close()
		})
	}
	raw := h.read()
	wg.Wait()
	c := &hostCall{stdout: string(out[0]), stderr: string(out[1]), report: out[2], raw: raw, end: ParseCallEnd(raw)}
	var rec struct {
		T      string `json:"t"`
		N      int    `json:"n"`
		Status int32  `json:"status"`
	}
	require.NoError(h.t, json.Unmarshal(raw, &rec), string(raw))
	require.Equal(h.t, "end", rec.T)
	require.Equal(h.t, h.n, rec.N)
	c.status = rec.Status
	return c
}

func memfd(t *testing.T, data []byte) *os.File {
	fd, err := unix.MemfdCreate("t", unix.MFD_CLOEXEC)
	require.NoError(t, err)
	f := os.NewFile(uintptr(fd), "t")
	_, err = f.Write(data)
	require.NoError(t, err)
	_, err = f.Seek(0, io.SeekStart)
	require.NoError(t, err)
	return f
}

func value(c *hostCall) string {
	if c.end.Value == nil {
		return "<none>"
	}
	return *c.end.Value
}

func TestSessionStateAndValues(t *testing.T) {
	h := startSessionHost(t)
	c := h.call("import json\nx = 41\ndef bump(n):\n    return n + 1\n", nil, nil, "")
	assert.Equal(t, int32(0), c.status, c.stderr)
	assert.Equal(t, "<none>", value(c), "no trailing expression: no value")
	c = h.call("print('out')\nx = bump(x)\nx", nil, nil, "")
	assert.Equal(t, "out\n", c.stdout)
	assert.Equal(t, "42", value(c))
	assert.Equal(t, "None", value(h.call("None", nil, nil, "")), "None is a value")
	assert.Equal(t, "'ab'", value(h.call("'a' + 'b'", nil, nil, "")))
	assert.Equal(t, "{'b': 1, 'a': 2}", value(h.call("{'b': 1, 'a': 2}", nil, nil, "")), "repr as python gives it, in insertion order")
	c = h.call("import os\nos.write(1, b'fd\\n')\n__name__", nil, nil, "")
	assert.Equal(t, "fd\n", c.stdout, "fd-level writes are the call's")
	assert.Equal(t, "'__main__'", value(c))
	big := value(h.call("'z' * (1 << 20)", nil, nil, ""))
	assert.True(t, strings.HasPrefix(big, "'zzz"), big[:10])
	assert.Contains(t, big, "… (1048578 characters in all)")
	assert.Less(t, len(big), 20000)
}

func TestSessionExceptionEndsTheCallNotTheSession(t *testing.T) {
	h := startSessionHost(t)
	h.call("def f(x):\n    return 1 / x\n", nil, nil, "")
	c := h.call("y = 2\nf(0)", nil, nil, "")
	assert.Equal(t, int32(1<<8), c.status)
	rep := ParseReport(c.report, false, nil)
	require.NotNil(t, rep.Exception)
	assert.Equal(t, "ZeroDivisionError", rep.Exception.Type)
	assert.Equal(t, 2, rep.Exception.Line, "the line in this call's code")
	assert.Contains(t, c.stderr, `File "<call 1>", line 2, in f`, "the frame of an earlier call's function")
	assert.Contains(t, c.stderr, "return 1 / x", "with its source line")
	assert.NotContains(t, c.stderr, "agentjail_session", "no frame of the server")
	assert.Equal(t, "<none>", value(c))
	assert.Equal(t, "2", value(h.call("y", nil, nil, "")), "what ran before the exception stays")

	c = h.call("def broken(:\n    pass", nil, nil, "")
	assert.Equal(t, int32(1<<8), c.status)
	rep = ParseReport(c.report, false, nil)
	require.NotNil(t, rep.Exception)
	assert.Equal(t, "SyntaxError", rep.Exception.Type)
	assert.Equal(t, 1, rep.Exception.Line)
}

func TestSessionTestsStdinAndFiles(t *testing.T) {
	h := startSessionHost(t)
	tests := &Tests{Function: "add", Cases: []TestCase{{Name: "small", Args: []json.RawMessage{json.RawMessage("1"), json.RawMessage("2")}, Expected: json.RawMessage("3")}}}
	require.NoError(t, tests.Validate())
	c := h.call("def add(a, b):\n    return a + b\n", tests, nil, "")
	v := ParseReport(c.report, false, tests).Verdicts(tests, &nsjail.Result{Status: nsjail.StatusOK})
	assert.Equal(t, 1, v.Passed, string(c.report))

	c = h.call("import sys\nfirst = sys.stdin.readline()\nfirst", nil, nil, "one\ntwo\n")
	assert.Equal(t, "'one\\n'", value(c))
	c = h.call("sys.stdin.read()", nil, nil, "three\n")
	assert.Equal(t, "'three\\n'", value(c), "each call's stdin, nothing of the last one's buffer")

	c = h.call("open('d/e/in.txt').read() + open('raw.bin', 'rb').read().hex()", nil,
		[]nsjail.File{{Path: "d/e/in.txt", Content: []byte("text:")}, {Path: "./raw.bin", Content: []byte{0, 0xff}}}, "")
	assert.Equal(t, "'text:00ff'", value(c), c.stderr)

	require.NoError(t, os.Symlink("/etc", filepath.Join(h.ws, "link")))
	c = h.call("1", nil, []nsjail.File{{Path: "ok.txt", Content: []byte("x")}, {Path: "link/passwd", Content: []byte("y")}}, "")
	require.NotNil(t, c.end.Refused, string(c.raw))
	assert.Equal(t, 1, c.end.Refused.I)
	assert.Contains(t, c.end.Refused.Error, "link/passwd")
	assert.Equal(t, "<none>", value(c), "a refused call runs no code")
	b, err := os.ReadFile(filepath.Join(h.ws, "ok.txt"))
	require.NoError(t, err)
	assert.Equal(t, "x", string(b), "the files before it are written")
	require.NoError(t, syscall.Mkfifo(filepath.Join(h.ws, "fifo"), 0o600))
	c = h.call("1", nil, []nsjail.File{{Path: "fifo", Content: []byte("y")}}, "")
	require.NotNil(t, c.end.Refused, "a FIFO is neither waited on nor written")
}

func TestSessionForkAndInterrupt(t *testing.T) {
	h := startSessionHost(t)
	c := h.call("import os\npid = os.fork()\nif pid == 0:\n    print('child')\nelse:\n    os.waitpid(pid, 0)\nos.getpid()", nil, nil, "")
	assert.Equal(t, "child\n", c.stdout)
	assert.Equal(t, fmt.Sprint(h.cmd.Process.Pid), value(c), "only the server answers")

	done := make(chan *hostCall)
	go func() { done <- h.call("import time\nx = 'before'\ntime.sleep(30)\nx = 'after'", nil, nil, "") }()
	time.Sleep(500 * time.Millisecond)
	require.NoError(t, h.cmd.Process.Signal(syscall.SIGINT))
	select {
	case c = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the interrupt did not end the call")
	}
	assert.Equal(t, int32(syscall.SIGINT), c.status, "ended as by an uncaught KeyboardInterrupt")
	assert.Contains(t, c.stderr, "KeyboardInterrupt")
	assert.Contains(t, c.stderr, `line 3, in <module>`)
	assert.NotContains(t, c.stderr, "agentjail_session", "the server's signal handler is not the call's frame")
	assert.Equal(t, "'before'", value(h.call("x", nil, nil, "")), "the session lives on")
	// An interrupt between calls is dropped: it cannot hit the next one.
	require.NoError(t, h.cmd.Process.Signal(syscall.SIGINT))
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, int32(0), h.call("import time\ntime.sleep(0.2)", nil, nil, "").status)
}

func TestSessionExitEndsIt(t *testing.T) {
	h := startSessionHost(t)
	h.n++
	payload := CallPayload(CallName(h.n), []byte("print('bye')\nimport sys\nsys.exit(3)"), nil, nil)
	pf := memfd(t, payload)
	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	require.NoError(t, unix.Sendmsg(h.ctl, fmt.Appendf(nil, `{"t":"call","n":%d}`, h.n),
		unix.UnixRights(int(pf.Fd()), int(null.Fd()), int(w.Fd()), int(w.Fd()), int(w.Fd())), nil, 0))
	w.Close()
	out, _ := io.ReadAll(r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { <-ctx.Done(); _ = h.cmd.Process.Kill() }()
	err = h.cmd.Wait()
	require.Equal(t, 3, h.cmd.ProcessState.ExitCode(), err)
	assert.Equal(t, "bye\n", string(out))
}
