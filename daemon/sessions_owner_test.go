package daemon

// Who a session belongs to, and its end at shutdown: only its creator may
// use it, and many sessions leave nothing behind.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

// TestSessionBelongsToItsCreator: another uid gets the 404 of an id that
// never existed (one made at the same millisecond: session_lost.go tells
// an earlier daemon's ids by their time), for every request; an earlier
// daemon's id gets the same 410 session_lost as its owner would; its own
// sessions are its own. The peer is this test binary re-executed as
// nobody (sessionPeer).
func TestSessionBelongsToItsCreator(t *testing.T) {
	systest.Require(t, systest.Root)
	r := realRunner(t)
	dir, err := os.MkdirTemp("", "agentjail-peer-")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	require.NoError(t, os.Chmod(dir, 0o755))
	o := testOptions()
	o.AllowUIDs, o.MaxSessions = []uint32{0, 65534}, 4
	sock := filepath.Join(dir, "peer.sock")
	l, err := Listen(sock, 0o666, -1)
	require.NoError(t, err)
	s := NewServer(o, r)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) }) // after startSession's clean-up
	c := HTTPClient(sock)
	sc := startSession(t, s, c, nil)
	sessionRun(t, c, sc.ID, map[string]any{"code": "secret = 42"})

	cmd := exec.Command("/proc/self/exe", "-test.run=^$")
	cmd.Env = []string{"AGENTJAIL_TEST_PEER=" + sock, "AGENTJAIL_TEST_PEER_SESSION=" + sc.ID}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	var got map[string]string
	require.NoError(t, json.Unmarshal(out, &got), string(out))
	unknown := strings.ReplaceAll(got["unknown"], sameTime(sc.ID), sc.ID)
	for _, k := range []string{"get", "run", "delete"} {
		assert.Equal(t, unknown, got[k], "%s of another's session is the 404 of an id that never existed", k)
	}
	assert.True(t, strings.HasPrefix(unknown, "404 "), unknown)
	code, b := do(t, c, http.MethodGet, "/v1/sessions/s-01ARZ3NDEKTSV4RRFFQ69G5FAV", nil)
	assert.Equal(t, fmt.Sprintf("%d %s", code, b), got["lost"], "an earlier daemon's id: the same answer for anyone")
	assert.True(t, strings.HasPrefix(got["lost"], "410 "), got["lost"])
	assert.Equal(t, "201 1 42", got["own"], "its own session works")
	assert.Equal(t, "1", got["listed"], "it lists only its own")
	_, b = do(t, c, http.MethodGet, "/v1/sessions", nil)
	var list struct{ Sessions []SessionInfo }
	require.NoError(t, json.Unmarshal(b, &list))
	require.Len(t, list.Sessions, 1, "root lists only its own")
	assert.Equal(t, "42", val(sessionRun(t, c, sc.ID, map[string]any{"code": "secret"})), "the other's DELETE did not end it")
	s.sess.closeAll() // the peer's own session too
}

// sessionPeer is TestSessionBelongsToItsCreator's other uid: it tries
// session id of root's, an id that never existed, and one of its own; it
// prints what each got as JSON.
func sessionPeer(sock, id string) int {
	c := HTTPClient(sock)
	call := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, "http://agentjail"+path, strings.NewReader(body))
		resp, err := c.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	out := map[string]string{}
	show := func(code int, body string) string { return fmt.Sprintf("%d %s", code, body) }
	out["get"] = show(call(http.MethodGet, "/v1/sessions/"+id, ""))
	out["run"] = show(call(http.MethodPost, "/v1/sessions/"+id+"/run", `{"code":"secret"}`))
	out["delete"] = show(call(http.MethodDelete, "/v1/sessions/"+id, ""))
	out["unknown"] = show(call(http.MethodGet, "/v1/sessions/"+sameTime(id), ""))
	out["lost"] = show(call(http.MethodGet, "/v1/sessions/s-01ARZ3NDEKTSV4RRFFQ69G5FAV", ""))
	code, body := call(http.MethodPost, "/v1/sessions", `{}`)
	var sc SessionCreated
	_ = json.Unmarshal([]byte(body), &sc)
	_, ran := call(http.MethodPost, "/v1/sessions/"+sc.ID+"/run", `{"code":"6 * 7"}`)
	var a callAnswer
	_ = json.Unmarshal([]byte(ran), &a)
	out["own"] = fmt.Sprintf("%d %d %s", code, a.Session.Calls, val(&a))
	_, listed := call(http.MethodGet, "/v1/sessions", "")
	var list struct{ Sessions []SessionInfo }
	_ = json.Unmarshal([]byte(listed), &list)
	out["listed"] = fmt.Sprint(len(list.Sessions))
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	return 0
}

// TestSessionsEndAtShutdown: an idle session ends at once, one in a call
// when the grace is over; nothing of either is left.
func TestSessionsEndAtShutdown(t *testing.T) {
	r := realRunner(t)
	o := testOptions()
	o.MaxSessions = 4
	sock := filepath.Join(t.TempDir(), "s.sock")
	l, err := Listen(sock, 0o660, -1)
	require.NoError(t, err)
	s := NewServer(o, r)
	go func() { _ = s.Serve(l) }()
	c := HTTPClient(sock)
	mounts := systest.MountCount()
	var ids []string
	var uids []uint32
	for range 2 {
		code, b := do(t, c, http.MethodPost, "/v1/sessions", map[string]any{})
		require.Equal(t, http.StatusCreated, code, string(b))
		var sc SessionCreated
		require.NoError(t, json.Unmarshal(b, &sc))
		ids, uids = append(ids, sc.ID), append(uids, hostUID(t, s, sc.ID))
	}
	answered := make(chan *callAnswer, 1)
	go func() {
		code, b := do(t, c, http.MethodPost, "/v1/sessions/"+ids[1]+"/run", map[string]any{"code": "import time\ntime.sleep(30)"})
		var a callAnswer
		if code == http.StatusOK && json.Unmarshal(b, &a) == nil {
			answered <- &a
		}
		close(answered)
	}()
	time.Sleep(500 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx))
	a := <-answered
	require.NotNil(t, a)
	assert.Equal(t, "shutdown", a.KillReason)
	assert.Equal(t, "shutdown", a.Session.EndedReason)
	for i, id := range ids {
		systest.NoLeftovers(t, uids[i], id, mounts)
	}
}

// TestManySessionsLeaveNothing: 100 sessions alive at once, then deleted:
// the daemon's fds, goroutines and memory are back near their baseline,
// and no jail is left.
func TestManySessionsLeaveNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 100 sessions")
	}
	const n = 100
	s, _, c := sessionServer(t, func(o *Options) { o.MaxSessions, o.QueueLength = n+1, 16 })
	sessionRun(t, c, startSession(t, s, c, nil).ID, map[string]any{"code": "pass"}) // warm up: the pools, the runtime
	c.CloseIdleConnections()
	time.Sleep(200 * time.Millisecond)
	debug.FreeOSMemory()
	fds0, gor0, rss0 := systest.FdCount(), runtime.NumGoroutine(), systest.SelfRSS()
	mounts := systest.MountCount()

	type made struct {
		id  string
		uid uint32
	}
	var mu sync.Mutex
	var all []made
	work := make(chan int, n)
	for i := range n {
		work <- i
	}
	close(work)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				code, b := do(t, c, http.MethodPost, "/v1/sessions", map[string]any{"limits": map[string]any{"memory_bytes": 32 << 20}})
				if !assert.Equal(t, http.StatusCreated, code, string(b)) {
					continue
				}
				var sc SessionCreated
				_ = json.Unmarshal(b, &sc)
				uid := hostUID(t, s, sc.ID)
				code, b = do(t, c, http.MethodPost, "/v1/sessions/"+sc.ID+"/run", map[string]any{"code": fmt.Sprintf("x = %d\nx", i)})
				assert.Equal(t, http.StatusOK, code, string(b))
				mu.Lock()
				all = append(all, made{sc.ID, uid})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Len(t, all, n)
	debug.FreeOSMemory()
	rssAlive := systest.SelfRSS()
	t.Logf("%d sessions alive: daemon fds %d (%d before), goroutines %d (%d), rss %.1f MiB (%.1f): %.0f KiB a session",
		n, systest.FdCount(), fds0, runtime.NumGoroutine(), gor0, float64(rssAlive)/(1<<20), float64(rss0)/(1<<20), float64(rssAlive-rss0)/n/1024)
	_, b := do(t, c, http.MethodGet, "/v1/sessions", nil)
	var list struct{ Sessions []SessionInfo }
	require.NoError(t, json.Unmarshal(b, &list))
	assert.Len(t, list.Sessions, n+1)

	for _, m := range all {
		wg.Go(func() {
			code, _ := do(t, c, http.MethodDelete, "/v1/sessions/"+m.id, nil)
			assert.Equal(t, http.StatusNoContent, code)
		})
	}
	wg.Wait()
	for _, m := range all {
		systest.NoLeftovers(t, m.uid, m.id, mounts)
	}
	c.CloseIdleConnections()
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= gor0+8 }, 5*time.Second, 50*time.Millisecond,
		"goroutines: %d before, %d after", gor0, runtime.NumGoroutine())
	require.Eventually(t, func() bool { return systest.FdCount() <= fds0+8 }, 5*time.Second, 50*time.Millisecond,
		"fds: %d before, %d after", fds0, systest.FdCount())
	debug.FreeOSMemory()
	rss1 := systest.SelfRSS()
	t.Logf("after: fds %d goroutines %d rss %.1f MiB", systest.FdCount(), runtime.NumGoroutine(), float64(rss1)/(1<<20))
	assert.Less(t, rss1, rss0+16<<20, "RSS grew by %d MiB", (rss1-rss0)>>20)
}
