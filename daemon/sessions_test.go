package daemon

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
	"agentjail/nsjail"
)

// Sessions through the daemon's socket, with real jails: the daemon's own
// session server (harness/session.py), warm or cold as the test runner's
// jail.start says (AGENTJAIL_TEST_COLD=1: cold).

// sessionServer serves sessions on a fresh socket; mod changes the options.
func sessionServer(t *testing.T, mod func(*Options)) (*Server, string, *http.Client) {
	t.Helper()
	r := realRunner(t)
	o := testOptions()
	o.MaxSessions = 16
	if mod != nil {
		mod(&o)
	}
	return startServer(t, o, r)
}

// do sends a request with a JSON body (nil: none) and returns the answer.
func do(t testing.TB, c *http.Client, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://agentjail"+path, rd)
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// startSession creates a session; the test deletes it (if still alive)
// and checks that nothing of it is left.
func startSession(t *testing.T, s *Server, c *http.Client, body map[string]any) SessionCreated {
	t.Helper()
	mounts := systest.MountCount()
	code, b := do(t, c, http.MethodPost, "/v1/sessions", cmpOr(body, map[string]any{}))
	require.Equal(t, http.StatusCreated, code, string(b))
	var sc SessionCreated
	require.NoError(t, json.Unmarshal(b, &sc))
	uid := hostUID(t, s, sc.ID)
	t.Cleanup(func() {
		do(t, c, http.MethodDelete, "/v1/sessions/"+sc.ID, nil)
		systest.NoLeftovers(t, uid, sc.ID, mounts)
	})
	return sc
}

func cmpOr(m, def map[string]any) map[string]any {
	if m == nil {
		return def
	}
	return m
}

// hostUID is the host uid of live session id's jail.
func hostUID(t *testing.T, s *Server, id string) uint32 {
	t.Helper()
	s.sess.mu.Lock()
	defer s.sess.mu.Unlock()
	live := s.sess.live[id]
	require.NotNil(t, live, "session %s is not alive", id)
	return live.js.HostUID()
}

// callAnswer is the answer to a call.
type callAnswer struct {
	Result
	Value   *string      `json:"value"`
	Session SessionState `json:"session"`
}

func sessionRun(t *testing.T, c *http.Client, id string, body map[string]any) *callAnswer {
	t.Helper()
	code, b := do(t, c, http.MethodPost, "/v1/sessions/"+id+"/run", body)
	require.Equal(t, http.StatusOK, code, string(b))
	var a callAnswer
	require.NoError(t, json.Unmarshal(b, &a))
	return &a
}

func val(a *callAnswer) string {
	if a.Value == nil {
		return "<null>"
	}
	return *a.Value
}

// apiErr decodes an error answer.
func apiErr(t *testing.T, b []byte) (code, message, reason string) {
	t.Helper()
	var e struct {
		Error struct {
			Code        string `json:"code"`
			Message     string `json:"message"`
			EndedReason string `json:"ended_reason"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(b, &e), string(b))
	return e.Error.Code, e.Error.Message, e.Error.EndedReason
}

// keys are the names of a JSON object.
func keys(t *testing.T, b []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &m))
	return slices.Sorted(maps.Keys(m))
}

func TestSessionLifecycle(t *testing.T) {
	s, _, c := sessionServer(t, nil)
	code, b := do(t, c, http.MethodPost, "/v1/sessions", map[string]any{"limits": map[string]any{"memory_bytes": 128 << 20, "pids": 32},
		"idle_timeout_ms": 60000, "env": map[string]string{"MY_FLAG": "on"}, "files": []map[string]string{{"path": "data/in.csv", "content": "a,b\n1,2\n"}}})
	require.Equal(t, http.StatusCreated, code, string(b))
	assert.Equal(t, []string{"endpoint", "environment", "expires_at", "id", "idle_timeout_ms", "limits", "node", "start"}, keys(t, b))
	var sc SessionCreated
	require.NoError(t, json.Unmarshal(b, &sc))
	uid := hostUID(t, s, sc.ID)
	assert.Regexp(t, `^s-[0-9A-HJKMNP-TV-Z]{26}\.`+regexp.QuoteMeta(s.opts.Node)+`$`, sc.ID, "s-, a ULID, \".\" and the node")
	assert.Equal(t, "default", sc.Environment)
	assert.Equal(t, SessionLimits{MemoryBytes: 128 << 20, Pids: 32, TmpBytes: 64 << 20, CPUTimeMs: testOptions().Policy.Max.CPUTime.Milliseconds(),
		OpenFiles: 256, FileSizeBytes: 32 << 20}, sc.Limits)
	assert.Equal(t, int64(60000), sc.IdleTimeoutMs)
	assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, sc.ExpiresAt)

	a := sessionRun(t, c, sc.ID, map[string]any{"code": "import os\nrows = open('data/in.csv').read().split()\nflag = os.environ['MY_FLAG']\nlen(rows)"})
	assert.Equal(t, "ok", a.Status, a.Stderr)
	assert.Equal(t, "2", val(a))
	assert.Equal(t, SessionState{ID: sc.ID, Calls: 1, Alive: true}, a.Session)
	assert.Regexp(t, `^j-`, a.ID)
	a = sessionRun(t, c, sc.ID, map[string]any{"code": "print(flag)\nx = 1"})
	assert.Equal(t, "on\n", a.Stdout)
	assert.Nil(t, a.Value, "no trailing expression")

	code, b = do(t, c, http.MethodGet, "/v1/sessions/"+sc.ID, nil)
	require.Equal(t, http.StatusOK, code, string(b))
	assert.Equal(t, []string{"alive", "calls", "cpu_time_ms", "created", "ended_reason", "endpoint", "environment", "expires_at", "id",
		"idle_timeout_ms", "last_used", "limits", "memory_bytes", "node", "peak_memory_bytes", "start"}, keys(t, b))
	var info SessionInfo
	require.NoError(t, json.Unmarshal(b, &info))
	assert.Equal(t, 2, info.Calls)
	assert.True(t, info.Alive)
	require.NotNil(t, info.MemoryBytes)
	require.NotNil(t, info.PeakMemoryBytes)
	// A live python's own pages: some hundred KiB for a fork of a zygote
	// (the pages it only reads are the zygote's), megabytes cold.
	assert.Greater(t, *info.MemoryBytes, int64(256<<10))
	assert.GreaterOrEqual(t, *info.PeakMemoryBytes, *info.MemoryBytes)
	assert.Greater(t, info.CPUTimeMs, 0.0)
	// GET does not count as use: the idle timer runs on.
	time.Sleep(20 * time.Millisecond)
	_, b2 := do(t, c, http.MethodGet, "/v1/sessions/"+sc.ID, nil)
	var info2 SessionInfo
	require.NoError(t, json.Unmarshal(b2, &info2))
	assert.Equal(t, info.LastUsed, info2.LastUsed)

	code, b = do(t, c, http.MethodGet, "/v1/sessions", nil)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, string(b), sc.ID)

	mounts := systest.MountCount()
	code, _ = do(t, c, http.MethodDelete, "/v1/sessions/"+sc.ID, nil)
	assert.Equal(t, http.StatusNoContent, code)
	systest.NoLeftovers(t, uid, sc.ID, mounts) // removed before the answer
	for _, r := range []struct{ method, path string }{{http.MethodPost, "/run"}, {http.MethodGet, ""}, {http.MethodDelete, ""}} {
		code, b = do(t, c, r.method, "/v1/sessions/"+sc.ID+r.path, map[string]any{"code": "1"})
		require.Equal(t, http.StatusGone, code, "%s %s: %s", r.method, r.path, b)
		e, msg, reason := apiErr(t, b)
		assert.Equal(t, "session_ended", e)
		assert.Equal(t, "deleted", reason)
		assert.Contains(t, msg, "deleted")
	}
	code, b = do(t, c, http.MethodGet, "/v1/sessions/"+sameTime(sc.ID), nil)
	assert.Equal(t, http.StatusNotFound, code, string(b))
}

func TestSessionStateAcross100Calls(t *testing.T) {
	s, _, c := sessionServer(t, nil)
	sc := startSession(t, s, c, nil)
	a := sessionRun(t, c, sc.ID, map[string]any{"code": "x = 0\ndef bump(n):\n    return n + 1\nf = open('log.txt', 'w')"})
	require.Equal(t, "ok", a.Status, a.Stderr)
	for i := range 100 {
		a = sessionRun(t, c, sc.ID, map[string]any{"code": "x = bump(x)\nf.write(str(x) + '\\n'); f.flush()\nx"})
		require.Equal(t, fmt.Sprint(i+1), val(a), a.Stderr)
		require.Equal(t, i+2, a.Session.Calls)
	}
	a = sessionRun(t, c, sc.ID, map[string]any{"code": "f.close()\nlen(open('log.txt').read().split())", "collect": []string{"log.txt"}})
	assert.Equal(t, "100", val(a))
	require.Len(t, a.Files, 1)
	assert.Equal(t, int64(9*2+90*3+4), a.Files[0].Size) // "1\n" … "100\n"
}

func TestSessionWarmAndCold(t *testing.T) {
	s, _, c := sessionServer(t, nil)
	for _, start := range []string{"warm", "cold"} {
		t.Run(start, func(t *testing.T) {
			sc := startSession(t, s, c, map[string]any{"start": start})
			want := start
			if _, up := realRunner(t).WarmInfo("default"); start == "warm" && !up {
				want = "cold" // no zygote: a warm request starts cold
			}
			assert.Equal(t, want, sc.Start)
			a := sessionRun(t, c, sc.ID, map[string]any{"code": "import sys, os\nx = 6 * 7\n(x, os.getpid(), sys.argv, __name__)"})
			assert.Equal(t, "(42, 2, [''], '__main__')", val(a), a.Stderr)
			assert.Equal(t, want, a.Start)
			a = sessionRun(t, c, sc.ID, map[string]any{"code": "x"})
			assert.Equal(t, "42", val(a))
		})
	}
}

func TestSessionCalls(t *testing.T) {
	s, _, c := sessionServer(t, nil)
	sc := startSession(t, s, c, nil)
	a := sessionRun(t, c, sc.ID, map[string]any{"code": "def add(a, b):\n    return a - b\n"})
	assert.Equal(t, "ok", a.Status)
	a = sessionRun(t, c, sc.ID, map[string]any{"code": "def add(a, b):\n    return a + b\n", "tests": map[string]any{"function": "add",
		"cases": []map[string]any{{"name": "small", "args": []int{1, 2}, "expected": 3}, {"args": []int{2, 2}, "expected": 5}}}})
	require.NotNil(t, a.Tests)
	assert.Equal(t, 1, a.Tests.Passed)
	assert.NotEmpty(t, a.Feedback)

	a = sessionRun(t, c, sc.ID, map[string]any{"code": "import sys\nsys.stdin.read().upper()", "stdin": "héllo"})
	assert.Equal(t, "'HÉLLO'", val(a))
	a = sessionRun(t, c, sc.ID, map[string]any{"code": "open('more.txt').read()", "files": []map[string]string{{"path": "more.txt", "content": "more"}}})
	assert.Equal(t, "'more'", val(a))

	a = sessionRun(t, c, sc.ID, map[string]any{"code": "y = 2\nundefined_name + y"})
	assert.Equal(t, "error", a.Status)
	assert.Equal(t, 1, a.ExitCode)
	require.NotNil(t, a.Exception)
	assert.Equal(t, "NameError", a.Exception.Type)
	assert.Equal(t, 2, a.Exception.Line)
	assert.Contains(t, a.Stderr, `File "<call 5>", line 2`)
	assert.True(t, slices.ContainsFunc(a.Feedback, func(f string) bool { return strings.Contains(f, "this session's 4 earlier calls") }), a.Feedback)
	assert.False(t, slices.ContainsFunc(a.Feedback, func(f string) bool { return strings.Contains(f, "share no state") }), "a run's hint, untrue in a session: %v", a.Feedback)
	assert.True(t, a.Session.Alive)
	assert.Equal(t, "2", val(sessionRun(t, c, sc.ID, map[string]any{"code": "y"})), "what ran before the exception stays")

	// A call past its wall time is interrupted; the session lives on.
	t0 := time.Now()
	a = sessionRun(t, c, sc.ID, map[string]any{"code": "import time\nz = 'before'\ntime.sleep(30)", "limits": map[string]any{"wall_time_ms": 300}})
	assert.Less(t, time.Since(t0), 5*time.Second)
	assert.Equal(t, "killed", a.Status)
	assert.Equal(t, "wall_timeout", a.KillReason)
	assert.Equal(t, "SIGINT", a.Signal)
	assert.Equal(t, 130, a.ExitCode)
	assert.Nil(t, a.Exception, "the interrupt was agentjail's, not the program's")
	assert.Contains(t, a.Stderr, "KeyboardInterrupt")
	assert.True(t, slices.ContainsFunc(a.Feedback, func(f string) bool { return strings.Contains(f, "interrupted at line 3") }), a.Feedback)
	assert.True(t, a.Session.Alive)
	assert.Equal(t, "'before'", val(sessionRun(t, c, sc.ID, map[string]any{"code": "z"})))

	// Output past its limit: cut, interrupted.
	a = sessionRun(t, c, sc.ID, map[string]any{"code": "while True: print('x' * 1000)", "limits": map[string]any{"output_bytes": 5000}})
	assert.Equal(t, "output_limit", a.KillReason)
	assert.True(t, a.StdoutTruncated)
	assert.True(t, a.Session.Alive)

	// Tests interrupted by the call's wall time: the case running fails, the rest did not run.
	a = sessionRun(t, c, sc.ID, map[string]any{"code": "import time\ndef slow(n):\n    time.sleep(n)\n    return n\n", "limits": map[string]any{"wall_time_ms": 500},
		"tests": map[string]any{"function": "slow", "cases": []map[string]any{{"name": "fast", "args": []int{0}, "expected": 0},
			{"name": "slow", "args": []int{30}, "expected": 30}, {"name": "after", "args": []int{0}, "expected": 0}}}})
	assert.Equal(t, "wall_timeout", a.KillReason)
	require.NotNil(t, a.Tests)
	assert.Equal(t, []bool{true, false, false}, []bool{a.Tests.Results[0].Passed, a.Tests.Results[1].Passed, a.Tests.Results[2].Passed})
	assert.Contains(t, a.Tests.Results[2].Detail, "during 'slow'")
	assert.True(t, a.Session.Alive)

	// The trailing expression's repr is capped.
	a = sessionRun(t, c, sc.ID, map[string]any{"code": "'z' * (10 << 20)"})
	assert.Equal(t, "ok", a.Status)
	assert.True(t, strings.HasPrefix(val(a), "'zzz"))
	assert.Less(t, len(val(a)), 20000)
	assert.Empty(t, a.Stdout, "the value is not output")
}

func TestSessionPeakMemoryPerCall(t *testing.T) {
	s, _, c := sessionServer(t, nil)
	sc := startSession(t, s, c, map[string]any{"limits": map[string]any{"memory_bytes": 512 << 20}})
	peak := func(code string) (int64, string) {
		a := sessionRun(t, c, sc.ID, map[string]any{"code": code})
		require.Equal(t, "ok", a.Status, a.Stderr)
		require.NotNil(t, a.PeakMemoryBytes)
		assert.Nil(t, a.PidsPeak, "pids.peak cannot be reset for a call")
		return *a.PeakMemoryBytes, a.PeakMemorySource
	}
	p128, _ := peak("b = bytearray(128 << 20)\ndel b")
	p64, src := peak("b = bytearray(64 << 20)\ndel b")
	base, _ := peak("pass")
	t.Logf("peaks: %d, %d, %d (%s)", p128, p64, base, src)
	if src = strings.TrimSuffix(src, nsjail.WarmPeakSuffix); src != "memory.max_usage_in_bytes" && src != "memory.peak" {
		assert.Equal(t, "memory.peak (since creation)", src) // the kernel cannot reset it: the session's, said so
		return
	}
	assert.InDelta(t, float64(base+128<<20), float64(p128), 4<<20)
	assert.InDelta(t, float64(base+64<<20), float64(p64), 4<<20, "the call's own peak")
	_, b := do(t, c, http.MethodGet, "/v1/sessions/"+sc.ID, nil)
	var info SessionInfo
	require.NoError(t, json.Unmarshal(b, &info))
	assert.InDelta(t, float64(p128), float64(*info.PeakMemoryBytes), 4<<20, "the session's peak is the highest")
}

// gone checks that every request about session id is now 410 with reason.
func gone(t *testing.T, c *http.Client, id, reason string) {
	t.Helper()
	code, b := do(t, c, http.MethodPost, "/v1/sessions/"+id+"/run", map[string]any{"code": "1"})
	require.Equal(t, http.StatusGone, code, string(b))
	e, msg, r := apiErr(t, b)
	assert.Equal(t, "session_ended", e)
	assert.Equal(t, reason, r)
	assert.Contains(t, msg, reason)
}

func TestSessionEnds(t *testing.T) {
	s, _, c := sessionServer(t, func(o *Options) { o.SessionMaxLifetime = 3 * time.Second })
	type end struct {
		name, reason string
		create       map[string]any
		code         string
		killReason   string // of the call, "" when it ends by itself
		exit         int
		wallMs       int // the call's wall_time_ms: 500 unless given
	}
	for _, e := range []end{
		{"sys.exit", "exited", nil, "print('bye')\nimport sys\nsys.exit(3)", "", 3, 0},
		{"os._exit", "exited", nil, "import os\nos._exit(4)", "", 4, 0},
		{"memory", "memory_limit", map[string]any{"limits": map[string]any{"memory_bytes": 64 << 20}}, "b = bytearray(256 << 20)", "memory_limit", 137, 0},
		{"cpu budget", "cpu_timeout", map[string]any{"limits": map[string]any{"cpu_time_ms": 500}}, "while True: pass", "cpu_timeout", 137, 10000},
		{"ignored interrupt", "wall_timeout", nil, "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(30)", "wall_timeout", 137, 0},
	} {
		t.Run(e.name, func(t *testing.T) {
			sc := startSession(t, s, c, e.create)
			sessionRun(t, c, sc.ID, map[string]any{"code": "x = 1"})
			a := sessionRun(t, c, sc.ID, map[string]any{"code": e.code, "limits": map[string]any{"wall_time_ms": cmp.Or(e.wallMs, 500)}})
			assert.Equal(t, e.exit, a.ExitCode, a.Stderr)
			assert.Equal(t, e.killReason, a.KillReason)
			assert.Equal(t, SessionState{ID: sc.ID, Calls: 2, Alive: false, EndedReason: e.reason}, a.Session)
			assert.True(t, slices.ContainsFunc(a.Feedback, func(f string) bool { return strings.Contains(f, "The session has ended ("+e.reason+")") }), a.Feedback)
			gone(t, c, sc.ID, e.reason)
			_, b := do(t, c, http.MethodGet, "/v1/sessions/"+sc.ID, nil)
			var info SessionInfo
			require.NoError(t, json.Unmarshal(b, &info))
			assert.Equal(t, e.reason, info.EndedReason, "its state, while the daemon remembers it")
			assert.False(t, info.Alive)
		})
	}
	t.Run("idle", func(t *testing.T) {
		sc := startSession(t, s, c, map[string]any{"idle_timeout_ms": 1000})
		sessionRun(t, c, sc.ID, map[string]any{"code": "x = 1"})
		t0 := time.Now()
		require.Eventually(t, func() bool { // GET does not count as use
			_, b := do(t, c, http.MethodGet, "/v1/sessions/"+sc.ID, nil)
			var info SessionInfo
			return json.Unmarshal(b, &info) == nil && !info.Alive
		}, 5*time.Second, 50*time.Millisecond)
		assert.InDelta(t, 1.0, time.Since(t0).Seconds(), 0.3)
		gone(t, c, sc.ID, "idle_timeout")
	})
	t.Run("lifetime", func(t *testing.T) {
		sc := startSession(t, s, c, nil)
		// A call running when the lifetime passes ends first.
		a := sessionRun(t, c, sc.ID, map[string]any{"code": "import time\ntime.sleep(3.5)\n'done'"})
		assert.Equal(t, "'done'", val(a))
		require.Eventually(t, func() bool {
			_, b := do(t, c, http.MethodGet, "/v1/sessions/"+sc.ID, nil)
			var info SessionInfo
			return json.Unmarshal(b, &info) == nil && !info.Alive
		}, 5*time.Second, 50*time.Millisecond)
		gone(t, c, sc.ID, "max_lifetime")
	})
	t.Run("deleted while busy", func(t *testing.T) {
		sc := startSession(t, s, c, nil)
		answered := make(chan *callAnswer)
		go func() {
			defer close(answered)
			code, b := do(t, c, http.MethodPost, "/v1/sessions/"+sc.ID+"/run", map[string]any{"code": "import time\nprint('up')\ntime.sleep(30)"})
			var a callAnswer
			if code == http.StatusOK && json.Unmarshal(b, &a) == nil {
				answered <- &a
			}
		}()
		time.Sleep(500 * time.Millisecond)
		code, _ := do(t, c, http.MethodDelete, "/v1/sessions/"+sc.ID, nil)
		assert.Equal(t, http.StatusNoContent, code)
		a := <-answered
		require.NotNil(t, a, "the running call ends with a result")
		assert.Equal(t, "killed", a.Status)
		assert.Equal(t, "cancelled", a.KillReason)
		assert.Equal(t, "up\n", a.Stdout)
		assert.Equal(t, "deleted", a.Session.EndedReason)
	})
}

func TestSessionForgottenAfterAWhile(t *testing.T) {
	s, _, c := sessionServer(t, func(o *Options) { o.sessionMemory = 500 * time.Millisecond })
	sc := startSession(t, s, c, nil)
	sessionRun(t, c, sc.ID, map[string]any{"code": "import os\nos._exit(0)"})
	gone(t, c, sc.ID, "exited")
	time.Sleep(600 * time.Millisecond)
	code, b := do(t, c, http.MethodPost, "/v1/sessions/"+sc.ID+"/run", map[string]any{"code": "1"})
	assert.Equal(t, http.StatusNotFound, code, string(b))
}

func TestSessionOneCallAtATime(t *testing.T) {
	s, _, c := sessionServer(t, nil)
	sc := startSession(t, s, c, nil)
	var wg sync.WaitGroup
	var first *callAnswer
	wg.Go(func() { first = sessionRun(t, c, sc.ID, map[string]any{"code": "import time\ntime.sleep(1)\n'first'"}) })
	time.Sleep(300 * time.Millisecond)
	t0 := time.Now()
	code, b := do(t, c, http.MethodPost, "/v1/sessions/"+sc.ID+"/run", map[string]any{"code": "'second'"})
	assert.Less(t, time.Since(t0), 500*time.Millisecond, "refused at once, not queued")
	assert.Equal(t, http.StatusConflict, code)
	e, _, _ := apiErr(t, b)
	assert.Equal(t, "session_busy", e)
	wg.Wait()
	assert.Equal(t, "'first'", val(first))
	assert.Equal(t, "'after'", val(sessionRun(t, c, sc.ID, map[string]any{"code": "'after'"})))
}

func TestSessionRequestsAreChecked(t *testing.T) {
	s, _, c := sessionServer(t, func(o *Options) { o.MaxSessions = 1 })
	for _, r := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"environment": "nope"}, "environment: unknown environment \"nope\"; this daemon has: default"},
		{map[string]any{"limits": map[string]any{"wall_time_ms": 100}}, "limits.wall_time_ms: a limit of each call"},
		{map[string]any{"limits": map[string]any{"memory_bytes": 2 << 30}}, "limits.memory_bytes: 2GiB is above this daemon's maximum"},
		{map[string]any{"idle_timeout_ms": 999}, "idle_timeout_ms: must be from 1000 to 3600000"},
		{map[string]any{"idle_timeout_ms": 3600001}, "idle_timeout_ms: must be from 1000"},
		{map[string]any{"start": "hot"}, "start: must be \"warm\" or \"cold\""},
		{map[string]any{"files": []map[string]string{{"path": "../x", "content": ""}}}, "files[0].path"},
		{map[string]any{"code": "1"}, "code: unknown field"},
	} {
		code, b := do(t, c, http.MethodPost, "/v1/sessions", r.body)
		require.Equal(t, http.StatusBadRequest, code, string(b))
		_, msg, _ := apiErr(t, b)
		assert.True(t, strings.HasPrefix(msg, r.field), "%q does not start with %q", msg, r.field)
	}
	sc := startSession(t, s, c, nil)
	code, b := do(t, c, http.MethodPost, "/v1/sessions", map[string]any{})
	assert.Equal(t, http.StatusTooManyRequests, code)
	e, _, _ := apiErr(t, b)
	assert.Equal(t, "too_many_sessions", e)
	for _, r := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{}, "code: is required"},
		{map[string]any{"code": "1", "limits": map[string]any{"memory_bytes": 1 << 20}}, "limits.memory_bytes: a limit of the whole session"},
		{map[string]any{"code": "1", "limits": map[string]any{"wall_time_ms": 0}}, "limits.wall_time_ms: must be positive"},
		{map[string]any{"code": "1", "collect": []string{"/etc/passwd"}}, "collect[0]"},
		{map[string]any{"code": "1", "env": map[string]string{}}, "env: unknown field"},
	} {
		code, b := do(t, c, http.MethodPost, "/v1/sessions/"+sc.ID+"/run", r.body)
		require.Equal(t, http.StatusBadRequest, code, string(b))
		_, msg, _ := apiErr(t, b)
		assert.True(t, strings.HasPrefix(msg, r.field), "%q does not start with %q", msg, r.field)
	}
	// A file the session cannot write is the call's field too; the code does not run.
	sessionRun(t, c, sc.ID, map[string]any{"code": "import os\nos.symlink('/etc', 'link')"})
	code, b = do(t, c, http.MethodPost, "/v1/sessions/"+sc.ID+"/run", map[string]any{"code": "ran = True",
		"files": []map[string]string{{"path": "link/x", "content": ""}}})
	require.Equal(t, http.StatusBadRequest, code, string(b))
	_, msg, _ := apiErr(t, b)
	assert.Contains(t, msg, "files[0].path: cannot write /workspace/link/x")
	a := sessionRun(t, c, sc.ID, map[string]any{"code": "'ran' in globals()"})
	assert.Equal(t, "False", val(a))
	assert.Equal(t, 2, a.Session.Calls, "a refused call is not counted")

	code, b = do(t, c, http.MethodGet, "/metrics", nil)
	require.Equal(t, http.StatusOK, code)
	for _, m := range []string{"agentjail_sessions_alive 1", "agentjail_sessions_created_total", "agentjail_session_calls_total{kill_reason=\"\",status=\"ok\"}"} {
		assert.Contains(t, string(b), m)
	}
}
