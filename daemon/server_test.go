package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/nsjail"
)

// fakeJailer answers runs without a jail, for the API's own behaviour.
type fakeJailer struct {
	run func(ctx context.Context, s *nsjail.Spec) (*nsjail.Result, error)
}

func (f *fakeJailer) Run(ctx context.Context, s *nsjail.Spec) (*nsjail.Result, error) {
	return f.run(ctx, s)
}

// userCode is the submitted code in a spec (the harness runs it from /code).
func userCode(s *nsjail.Spec) string {
	for _, f := range s.CodeFiles {
		if f.Path == "main.py" {
			return string(f.Content)
		}
	}
	return ""
}

func okResult(s *nsjail.Spec) *nsjail.Result {
	return &nsjail.Result{ID: "j-test", Status: nsjail.StatusOK, Stdout: []byte("hi\n"), MemoryLimitBytes: s.Limits.MemoryBytes, PeakMemoryBytes: 3 << 20, PidsPeak: 1}
}

// blockUntilCancelled is a jail that runs until its context ends and
// reports the cause as the kill reason, as nsjail.Runner does.
func blockUntilCancelled(started chan<- struct{}) *fakeJailer {
	return &fakeJailer{run: func(ctx context.Context, s *nsjail.Spec) (*nsjail.Result, error) {
		if started != nil {
			started <- struct{}{}
		}
		<-ctx.Done()
		res := okResult(s)
		res.Status, res.KillReason = nsjail.StatusKilled, nsjail.KillCancelled
		if errors.Is(context.Cause(ctx), nsjail.KillShutdown) {
			res.KillReason = nsjail.KillShutdown
		}
		return res, nil
	}}
}

// testStart is how the tests' requests start by default: warm, or cold
// with AGENTJAIL_TEST_COLD=1 (CI runs both).
func testStart() nsjail.StartMode {
	if os.Getenv("AGENTJAIL_TEST_COLD") == "1" {
		return nsjail.StartCold
	}
	return nsjail.StartWarm
}

func testOptions() Options {
	max := nsjail.DefaultLimits()
	max.MemoryBytes = 1 << 30
	return Options{
		Policy:          Policy{Defaults: nsjail.DefaultLimits(), Max: &max, Environments: realEnvs, Start: testStart()},
		AllowUIDs:       []uint32{uint32(os.Getuid())},
		MaxConcurrent:   2,
		QueueLength:     2,
		MaxRequestBytes: 1 << 20,
		Version:         "test",
		CgroupVersion:   "v1",
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// startServer serves on a fresh socket and shuts the server down at the
// end of the test.
func startServer(t testing.TB, o Options, j Jailer) (*Server, string, *http.Client) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "agentjail.sock")
	l, err := Listen(sock, 0o660, -1)
	require.NoError(t, err)
	s := NewServer(o, j)
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		assert.ErrorIs(t, <-served, http.ErrServerClosed)
	})
	return s, sock, HTTPClient(sock)
}

type apiError struct {
	Error struct{ Code, Message string } `json:"error"`
}

func post(t testing.TB, c *http.Client, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Post("http://agentjail/v1/run", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

func decodeErr(t *testing.T, b []byte) apiError {
	t.Helper()
	var e apiError
	require.NoError(t, json.Unmarshal(b, &e), string(b))
	return e
}

func TestAPIRoundTrip(t *testing.T) {
	var got *nsjail.Spec
	o := testOptions()
	o.PreparedReady = func() int { return 2 }
	_, _, c := startServer(t, o, &fakeJailer{run: func(ctx context.Context, s *nsjail.Spec) (*nsjail.Result, error) {
		got = s
		res := okResult(s)
		res.Prepared = true
		return res, nil
	}})
	resp, b := post(t, c, `{"code":"print('hi')","stdin":"in","env":{"A":"1"},"limits":{"memory_bytes":33554432,"wall_time_ms":1500},
		"files":[{"path":"d/a.txt","content":"aGk=","encoding":"base64"}],"on_forbidden_syscall":"kill"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var res map[string]any
	require.NoError(t, json.Unmarshal(b, &res))
	assert.Equal(t, "ok", res["status"])
	assert.Equal(t, "hi\n", res["stdout"])
	assert.Equal(t, []any{}, res["feedback"])
	assert.Equal(t, []any{}, res["files"])
	for _, k := range []string{"id", "exit_code", "signal", "kill_reason", "seccomp", "stderr", "stdout_truncated", "stderr_truncated",
		"wall_time_ms", "cpu_time_ms", "peak_memory_bytes", "memory_limit_bytes", "exception", "tests"} {
		assert.Contains(t, res, k)
	}
	// The request reached the jail as asked, defaults filling the rest.
	require.NotNil(t, got)
	assert.Equal(t, int64(32<<20), got.Limits.MemoryBytes)
	assert.Equal(t, 1500*time.Millisecond, got.Limits.WallTime)
	assert.Equal(t, nsjail.DefaultLimits().Pids, got.Limits.Pids)
	assert.Equal(t, []byte("in"), got.Stdin)
	assert.Equal(t, "hi", string(got.Files[0].Content))
	assert.Equal(t, "1", got.Env["A"])
	assert.True(t, got.Report)

	resp, err := c.Get("http://agentjail/v1/health")
	require.NoError(t, err)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.JSONEq(t, `{"status":"ok","version":"test","cgroup":"v1","running":0,"queued":0}`, string(b))

	resp, err = c.Get("http://agentjail/metrics")
	require.NoError(t, err)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(b), `agentjail_runs_total{kill_reason="",status="ok"} 1`)
	assert.Contains(t, string(b), "agentjail_running_jails 0")
	assert.Contains(t, string(b), "agentjail_queue_depth 0")
	assert.Contains(t, string(b), "agentjail_prepared_jails 2")
	assert.Contains(t, string(b), "agentjail_runs_prepared_total 1")
	assert.Contains(t, string(b), "agentjail_run_peak_memory_bytes_bucket")
}

// TestAPIErrors: every error of docs/contract.md §2 is JSON with its code, and the
// message names what to fix.
func TestAPIErrors(t *testing.T) {
	o := testOptions()
	_, _, c := startServer(t, o, &fakeJailer{run: func(ctx context.Context, s *nsjail.Spec) (*nsjail.Result, error) {
		if strings.Contains(userCode(s), "setup-fails") {
			return nil, &nsjail.StageError{Stage: "pivot_root", Msg: "EPERM"}
		}
		return okResult(s), nil
	}})
	for _, tc := range []struct {
		body, code, msg string
		status          int
	}{
		{`{`, "invalid_request", "body: empty or incomplete", 400},
		{`not json`, "invalid_request", "body: invalid JSON", 400},
		{`{"stdin":"x"}`, "invalid_request", "code: is required", 400},
		{`{"code":"pass","limts":{}}`, "invalid_request", "limts: unknown field", 400},
		{`{"code":"pass","limits":{"memory_bytes":"big"}}`, "invalid_request", "limits.memory_bytes: must be a whole number", 400},
		{`{"code":"pass","limits":{"memory_bytes":1.5}}`, "invalid_request", "limits.memory_bytes: must be a whole number", 400},
		{`{"code":"pass","files":[{"path":"a","content":""},{"path":"b","content":5}]}`, "invalid_request", "files[1].content: must be a string, got JSON number 5", 400},
		{`{"code":"pass","limits":{"memroy_bytes":1}}`, "invalid_request", `limits.memroy_bytes: unknown field; did you mean "memory_bytes"?`, 400},
		// encoding/json would take these silently: the last "code", and
		// "Code" for "code". A proxy in front may read them otherwise.
		{`{"code":"pass","code":"import os"}`, "invalid_request", "code: is given twice", 400},
		{`{"code":"pass","Code":"import os"}`, "invalid_request", `Code: unknown field; did you mean "code"?`, 400},
		{`{"code":"pass","tests":{"function":"f","cases":[{"kwargs":{"a":1,"a":2}}]}}`, "invalid_request", "tests.cases[0].kwargs.a: is given twice", 400},
		{`{"code":"pass","limits":{"memory_bytes":1024}}`, "invalid_request", "limits.memory_bytes: must be at least 16 MiB", 400},
		{`{"code":"pass","limits":{"memory_bytes":4294967296}}`, "invalid_request", "limits.memory_bytes: 4GiB is above this daemon's maximum of 1GiB", 400},
		{`{"code":"pass","limits":{"wall_time_ms":-5}}`, "invalid_request", "limits.wall_time_ms: must be positive", 400},
		{`{"code":"pass","files":[{"path":"../x","content":""}]}`, "invalid_request", "files[0].path", 400},
		{`{"code":"pass","files":[{"path":"x","content":"!!","encoding":"base64"}]}`, "invalid_request", "files[0].content: not valid base64", 400},
		{`{"code":"pass","files":[{"path":"x","content":"","encoding":"latin1"}]}`, "invalid_request", `files[0].content: encoding must be "utf-8" or "base64"`, 400},
		{`{"code":"pass","env":{"HOME":"/"}}`, "invalid_request", "env: HOME is set by the jail", 400},
		{`{"code":"pass","on_forbidden_syscall":"ignore"}`, "invalid_request", "on_forbidden_syscall", 400},
		{`{"code":"pass","limits":{"cpus":1024}}`, "invalid_request", "cpus: unknown field", 400},
		{`{"code":"pass"} {"code":"pass"}`, "invalid_request", "body: one JSON object only", 400},
		{`{"code":"` + strings.Repeat("x", 2<<20) + `"}`, "too_large", "larger than this daemon's limit of 1048576 bytes", 413},
		{`{"code":"# setup-fails"}`, "setup_failed", "pivot_root: EPERM", 500},
	} {
		resp, b := post(t, c, tc.body)
		assert.Equal(t, tc.status, resp.StatusCode, "%.60s: %s", tc.body, b)
		e := decodeErr(t, b)
		assert.Equal(t, tc.code, e.Error.Code, "%.60s", tc.body)
		assert.Contains(t, e.Error.Message, tc.msg, "%.60s", tc.body)
	}
	resp, err := c.Get("http://agentjail/v1/run")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	resp, err = c.Get("http://agentjail/v2/run")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, "not_found", decodeErr(t, b).Error.Code)
}

// A body declared larger than the limit is refused before a byte of it is
// read: the answer comes while the client has sent only its headers.
func TestTooLargeRefusedUnread(t *testing.T) {
	_, sock, c := startServer(t, testOptions(), &fakeJailer{})
	assert.Equal(t, http.StatusRequestEntityTooLarge, postUnsent(t, sock, 2000000))
	// Of no declared length (chunked), and too large only past a valid
	// object: 413 as well, not "one JSON object only".
	body := io.MultiReader(strings.NewReader(`{"code":"pass"}`), strings.NewReader(strings.Repeat(" ", 2<<20)))
	resp, err := c.Post("http://agentjail/v1/run", "application/json", body)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s", b)
	assert.Equal(t, "too_large", decodeErr(t, b).Error.Code)
}

// rawPost sends a run request on a connection of its own, which the test
// closes at its end: headers that declare a body of length bytes, then
// sent (all of the body, or less).
func rawPost(t testing.TB, sock string, length int, sent string) *net.UnixConn {
	t.Helper()
	conn, err := net.Dial("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	_, err = fmt.Fprintf(conn, "POST /v1/run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", length, sent)
	require.NoError(t, err)
	return conn.(*net.UnixConn)
}

// readAnswer reads the answer on a rawPost connection, within 5 s.
func readAnswer(t testing.TB, conn net.Conn) (*http.Response, []byte) {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b
}

// postUnsent sends a run request's headers, declaring a body of n bytes,
// and the body's first bytes only; it returns the status of the answer,
// which must come without the rest. (Above 256 KiB: net/http reads a
// smaller unread body itself before it answers.)
func postUnsent(t *testing.T, sock string, n int) int {
	t.Helper()
	resp, _ := readAnswer(t, rawPost(t, sock, n, `{"code":"`))
	return resp.StatusCode
}

// TestQueueFullAndRetryAfter: with both slots busy and the queue full, the
// next request is refused at once with 429 and a Retry-After.
func TestQueueFullAndRetryAfter(t *testing.T) {
	started := make(chan struct{}, 10)
	o := testOptions()
	o.MaxConcurrent, o.QueueLength = 2, 1
	s, sock, c := startServer(t, o, blockUntilCancelled(started))
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, "POST", "http://agentjail/v1/run", strings.NewReader(`{"code":"pass"}`))
			if resp, err := c.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	<-started
	<-started
	require.Eventually(t, func() bool { return s.Queued() == 1 }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, 2, s.Running())
	resp, b := post(t, c, `{"code":"pass"}`)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "queue_full", decodeErr(t, b).Error.Code)
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	assert.Equal(t, http.StatusRequestEntityTooLarge, postUnsent(t, sock, 2000000), "a body too large for any slot is 413 even when the queue is full: a retry cannot help")
	cancel()
	wg.Wait()
	require.Eventually(t, func() bool { return s.Running() == 0 && s.Queued() == 0 }, 5*time.Second, 5*time.Millisecond)
}

// TestClientDisconnectCancels: a client that goes away mid-run gets its
// jail ended with "cancelled" within 100 ms.
func TestClientDisconnectCancels(t *testing.T) {
	type end struct {
		at    time.Time
		cause error // what the server told the jail to die of
	}
	started := make(chan struct{}, 1)
	ended := make(chan end, 1)
	_, sock, _ := startServer(t, testOptions(), &fakeJailer{run: func(ctx context.Context, s *nsjail.Spec) (*nsjail.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		ended <- end{time.Now(), context.Cause(ctx)}
		return okResult(s), nil
	}})
	body := `{"code":"import time; time.sleep(60)"}`
	conn := rawPost(t, sock, len(body), body)
	<-started
	closed := time.Now()
	conn.Close()
	select {
	case e := <-ended:
		assert.Less(t, e.at.Sub(closed), 100*time.Millisecond, "jail ended too late after the client left")
		assert.False(t, errors.Is(e.cause, nsjail.KillShutdown), "cancelled as a shutdown: %v", e.cause)
		assert.ErrorIs(t, e.cause, context.Canceled, "the request's own end is the cause")
	case <-time.After(5 * time.Second):
		t.Fatal("the jail was not cancelled when the client went away")
	}
}

// TestShutdownGraceThenKill: Shutdown lets running jails finish within the
// grace period, then kills them with "shutdown" and answers them; queued
// requests and new ones get 503.
func TestShutdownGraceThenKill(t *testing.T) {
	started := make(chan struct{}, 4)
	o := testOptions()
	o.MaxConcurrent, o.QueueLength = 1, 4
	sock := filepath.Join(t.TempDir(), "s.sock")
	l, err := Listen(sock, 0o600, -1)
	require.NoError(t, err)
	s := NewServer(o, blockUntilCancelled(started))
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	c := HTTPClient(sock)

	type answer struct {
		status int
		body   []byte
	}
	answers := make(chan answer, 2)
	for range 2 {
		go func() {
			resp, err := c.Post("http://agentjail/v1/run", "application/json", strings.NewReader(`{"code":"pass"}`))
			if err != nil {
				answers <- answer{0, []byte(err.Error())}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers <- answer{resp.StatusCode, b}
		}()
	}
	<-started
	require.Eventually(t, func() bool { return s.Queued() == 1 }, 5*time.Second, 5*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	require.NoError(t, s.Shutdown(ctx))
	assert.GreaterOrEqual(t, time.Since(t0), 200*time.Millisecond, "the grace period was not granted")
	var got []answer
	got = append(got, <-answers, <-answers)
	var killed, refused int
	for _, a := range got {
		switch a.status {
		case 200:
			var r Result
			require.NoError(t, json.Unmarshal(a.body, &r))
			assert.Equal(t, "shutdown", r.KillReason)
			killed++
		case 503:
			assert.Equal(t, "draining", decodeErr(t, a.body).Error.Code)
			refused++
		default:
			t.Errorf("unexpected answer %d %s", a.status, a.body)
		}
	}
	assert.Equal(t, 1, killed, "the running jail is killed and answered")
	assert.Equal(t, 1, refused, "the queued request is refused")
	assert.ErrorIs(t, <-served, http.ErrServerClosed)
	_, err = os.Stat(sock)
	assert.NoError(t, err, "the socket file stays for the caller of Listen to remove")
}

// TestQueuedBytesBound: the requests waiting for a slot hold at most
// MaxQueuedBytes of bodies together; one more gets 429 and says why, while a
// small one still finds room.
func TestQueuedBytesBound(t *testing.T) {
	started := make(chan struct{}, 10)
	o := testOptions()
	o.MaxConcurrent, o.QueueLength, o.MaxQueuedBytes = 1, 10, 3000
	s, sock, c := startServer(t, o, blockUntilCancelled(started))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	send := func(codeLen int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := `{"code":"` + strings.Repeat("#", codeLen) + `"}`
			req, _ := http.NewRequestWithContext(ctx, "POST", "http://agentjail/v1/run", strings.NewReader(body))
			if resp, err := c.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	send(10) // runs
	<-started
	send(2000) // waits, holding about 2 KB
	require.Eventually(t, func() bool { return s.Queued() == 1 }, 5*time.Second, 5*time.Millisecond)
	resp, b := post(t, c, `{"code":"`+strings.Repeat("#", 1500)+`"}`)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	e := decodeErr(t, b)
	assert.Equal(t, "queue_full", e.Error.Code)
	assert.Contains(t, e.Error.Message, "admission.max_queued_bytes = 3000")
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	// A body declared too large for the bound is refused before it is
	// sent, as one too large for max_request_bytes is.
	assert.Equal(t, http.StatusTooManyRequests, postUnsent(t, sock, 600000))
	send(500) // fits beside the 2 KB one
	require.Eventually(t, func() bool { return s.Queued() == 2 }, 5*time.Second, 5*time.Millisecond)
	cancel()
	wg.Wait()
	require.Eventually(t, func() bool { return s.Running() == 0 && s.Queued() == 0 }, 5*time.Second, 5*time.Millisecond)
	assert.Zero(t, s.adm.waitingBytes())
}

// A body that does not come gives its share of the decoding bound back
// after bodyTimeout, with an answer that says so: two such clients (here
// declaring the largest size, so the bound is full) used to stop every
// later run.
func TestSlowBodyGivesItsSlotBack(t *testing.T) {
	o := testOptions()
	o.MaxConcurrent = 1
	o.MaxQueuedBytes = 2 * o.MaxRequestBytes
	o.bodyTimeout = 300 * time.Millisecond
	_, sock, c := startServer(t, o, &fakeJailer{run: func(ctx context.Context, s *nsjail.Spec) (*nsjail.Result, error) {
		if strings.Contains(userCode(s), "long") {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(3 * o.bodyTimeout):
			}
		}
		return okResult(s), nil
	}})
	// The body's deadline is gone once it has come: a run may last longer.
	resp, b := post(t, c, `{"code":"# long"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)

	slow := []net.Conn{rawPost(t, sock, int(o.MaxRequestBytes), `{"co`), rawPost(t, sock, int(o.MaxRequestBytes), `{"co`)}
	time.Sleep(50 * time.Millisecond) // both hold a slot
	c.Timeout = 5 * time.Second
	resp, b = post(t, c, `{"code":"pass"}`)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	// One that ends early says so.
	conn := rawPost(t, sock, 100, `{"code"`)
	require.NoError(t, conn.CloseWrite())
	short, b := readAnswer(t, conn)
	assert.Equal(t, http.StatusBadRequest, short.StatusCode)
	assert.Equal(t, "body: it ended after 7 of the 100 bytes its Content-Length declares", decodeErr(t, b).Error.Message)

	for _, conn := range slow {
		resp, b := readAnswer(t, conn)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.Contains(t, decodeErr(t, b).Error.Message, "the request body did not arrive within 300ms (4 bytes of it came)")
	}
}

// A client that never reads its answer holds neither its handler nor
// Shutdown beyond answerTimeout; on a kept-alive connection the deadline
// of one answer does not cut the next one.
func TestUnreadAnswerIsDropped(t *testing.T) {
	o := testOptions()
	o.answerTimeout = 300 * time.Millisecond
	ranBig := make(chan struct{})
	s, sock, c := startServer(t, o, &fakeJailer{run: func(ctx context.Context, sp *nsjail.Spec) (*nsjail.Result, error) {
		res := okResult(sp)
		if strings.Contains(userCode(sp), "big") {
			res.Stdout = bytes.Repeat([]byte("x"), 16<<20) // far more than the socket buffers
			close(ranBig)
		}
		return res, nil
	}})
	// Kept alive: a second answer more than answerTimeout after the first.
	resp, b := post(t, c, `{"code":"pass"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	time.Sleep(2 * o.answerTimeout)
	resp, b = post(t, c, `{"code":"pass"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)

	body := `{"code":"# big"}`
	rawPost(t, sock, len(body), body) // and never read
	<-ranBig
	time.Sleep(50 * time.Millisecond) // writing the answer, blocked
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(ctx) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown waits for a client that does not read")
	}
}

// A run that ends before its jail started, because its client left or the
// daemon is shutting down, is no set-up failure: it is counted as
// cancelled, or answered 503, never 500 "setup_failed".
func TestEndedBeforeTheJailStarted(t *testing.T) {
	started := make(chan struct{}, 2)
	s, _, c := startServer(t, testOptions(), &fakeJailer{run: func(ctx context.Context, sp *nsjail.Spec) (*nsjail.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err() // as nsjail.Runner.Run before its jail starts
	}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	req, err := http.NewRequestWithContext(ctx, "POST", "http://agentjail/v1/run", strings.NewReader(`{"code":"pass"}`))
	require.NoError(t, err)
	_, err = c.Do(req)
	require.ErrorIs(t, err, context.Canceled)
	require.Eventually(t, func() bool { return s.Running() == 0 }, 5*time.Second, 5*time.Millisecond)
	metrics := func() string {
		resp, err := c.Get("http://agentjail/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	require.Eventually(t, func() bool {
		return strings.Contains(metrics(), `agentjail_requests_rejected_total{code="cancelled"} 1`)
	}, 5*time.Second, 5*time.Millisecond)
	assert.False(t, strings.Contains(metrics(), `{code="setup_failed"}`), "counted as a set-up failure")

	answer := make(chan *http.Response, 1)
	go func() {
		resp, b := post(t, c, `{"code":"pass"}`)
		resp.Body = io.NopCloser(bytes.NewReader(b))
		answer <- resp
	}()
	<-started
	shut, stop := context.WithCancel(context.Background())
	stop() // no grace: the running jail is killed at once
	require.NoError(t, s.Shutdown(shut))
	resp := <-answer
	b, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", b)
	assert.Equal(t, "draining", decodeErr(t, b).Error.Code)
}

// A client that shuts down its writing side after its request looks gone
// to net/http, and its jail is cancelled; it still reads, and gets the
// result that says so, or, when it was still queued, a closed connection:
// never an empty 200.
func TestHalfClosedClient(t *testing.T) {
	o := testOptions()
	o.MaxConcurrent, o.QueueLength = 1, 2
	started := make(chan struct{}, 4)
	s, sock, c := startServer(t, o, blockUntilCancelled(started))
	const body = `{"code":"pass"}`
	send := func() *net.UnixConn { return rawPost(t, sock, len(body), body) }
	// The slot is taken by a client that stays.
	busy, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		req, _ := http.NewRequestWithContext(busy, "POST", "http://agentjail/v1/run", strings.NewReader(`{"code":"pass"}`))
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	queued := send()
	require.Eventually(t, func() bool { return s.Queued() == 1 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, queued.CloseWrite())
	require.NoError(t, queued.SetReadDeadline(time.Now().Add(5*time.Second)))
	b, err := io.ReadAll(queued)
	require.NoError(t, err)
	assert.Empty(t, string(b), "a queued client that half-closed is answered nothing")
	cancel()
	require.Eventually(t, func() bool { return s.Running() == 0 && s.Queued() == 0 }, 5*time.Second, 5*time.Millisecond)

	running := send()
	<-started
	require.NoError(t, running.CloseWrite())
	resp, b := readAnswer(t, running)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var r Result
	require.NoError(t, json.Unmarshal(b, &r), "%q", b)
	assert.Equal(t, "cancelled", r.KillReason)
}

// The README's figures for what Options leaves unset: a body has 30 s, an
// answer 1 min, and the bodies being decoded hold max_queued_bytes (with
// no such bound, as many of the largest size as max(2, max_concurrent)).
func TestServerDefaults(t *testing.T) {
	s := NewServer(Options{MaxConcurrent: 3, MaxRequestBytes: 8 << 20, MaxQueuedBytes: 64 << 20}, &fakeJailer{})
	assert.Equal(t, 30*time.Second, s.opts.bodyTimeout)
	assert.Equal(t, time.Minute, s.opts.answerTimeout)
	assert.Equal(t, int64(64<<20), s.decoding.size)
	s = NewServer(Options{MaxConcurrent: 3, MaxRequestBytes: 8 << 20}, &fakeJailer{})
	assert.Equal(t, int64(3*8<<20), s.decoding.size)
}
