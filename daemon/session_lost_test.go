package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/nsjail"
)

// Sessions of an earlier daemon (session_lost.go): an id this daemon does
// not know, made before it started, is 410 session_lost; any other id it
// does not know is the 404 it always was.

func TestSessionIDTime(t *testing.T) {
	before := time.Now().Truncate(time.Millisecond)
	for _, id := range []string{nsjail.NewSessionID(), newSessionID("node-1.example")} {
		made, ok := sessionIDTime(id)
		require.True(t, ok, id)
		assert.False(t, made.Before(before), "%s: made %s, before %s", id, made, before)
		assert.WithinDuration(t, time.Now(), made, time.Second, id)
	}
	// The ULID spec's example: 01ARZ3NDEK is 1469922850259 ms.
	made, ok := sessionIDTime("s-01ARZ3NDEKTSV4RRFFQ69G5FAV.node-a")
	require.True(t, ok)
	assert.Equal(t, int64(1469922850259), made.UnixMilli(), "2016-07-30 23:54:10.259 UTC")
	made, ok = sessionIDTime("s-7ZZZZZZZZZZZZZZZZZZZZZZZZZ")
	require.True(t, ok, "the largest ULID")
	assert.Equal(t, int64(1<<48-1), made.UnixMilli())
	for _, id := range []string{"", "s-", "s-0", "01ARZ3NDEKTSV4RRFFQ69G5FAV", "x-01ARZ3NDEKTSV4RRFFQ69G5FAV",
		"s-01arz3ndektsv4rrffq69g5fav", "s-01ARZ3NDEKTSV4RRFFQ69G5FA", "s-01ARZ3NDEKTSV4RRFFQ69G5FAVV",
		"s-8ZZZZZZZZZZZZZZZZZZZZZZZZZ", "s-01ARZ3NDEKTSV4RRFFQ69G5FAU", "s-01ARZ3NDEKTSV4RRFFQ69G5FA!"} {
		_, ok := sessionIDTime(id)
		assert.False(t, ok, "%q is not a session id", id)
	}

	tbl := &sessions{}
	tbl.since.Store(1469922850260)
	assert.True(t, tbl.lost("s-01ARZ3NDEKTSV4RRFFQ69G5FAV"), "a millisecond before the start")
	tbl.since.Store(1469922850259)
	assert.False(t, tbl.lost("s-01ARZ3NDEKTSV4RRFFQ69G5FAV"), "in the start's millisecond: this daemon's")
	// The clock stepped back after the start: a session this daemon makes
	// then has an earlier time, and moves the start back with it.
	tbl.since.Store(1469922850300)
	tbl.made("s-01ARZ3NDEKTSV4RRFFQ69G5FAV.node-a")
	assert.False(t, tbl.lost("s-01ARZ3NDEKTSV4RRFFQ69G5FAV"), "this daemon's own session, made after a clock step back")
	assert.True(t, tbl.lost("s-01ARZ3NDEJTSV4RRFFQ69G5FAV"), "a millisecond before it: still an earlier daemon's")
	tbl.made("s-01ARZ3NDEMTSV4RRFFQ69G5FAV")
	assert.EqualValues(t, 1469922850259, tbl.since.Load(), "a later id leaves the start where it is")
	assert.False(t, tbl.lost("s-0"), "not an id: not found")
}

// sameTime is a made-up session id of the time id was made: its ULID's
// random part replaced.
func sameTime(id string) string {
	return id[:len("s-")+10] + "ZZZZZZZZZZZZZZZZ" + id[len("s-")+26:]
}

// TestSessionLostAfterRestart: a daemon stops (its sessions die with it)
// and another starts on the same node; a session of the first is 410
// session_lost on every endpoint, with a message that says to start a new
// one. An id it made itself, or one of this time it never made, is 404.
func TestSessionLostAfterRestart(t *testing.T) {
	r := realRunner(t)
	o := testOptions()
	o.MaxSessions = 4
	first := NewServer(o, r)
	sock1 := t.TempDir() + "/first.sock"
	l, err := Listen(sock1, 0o660, -1)
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- first.Serve(l) }()
	c1 := HTTPClient(sock1)
	code, b := do(t, c1, http.MethodPost, "/v1/sessions", map[string]any{})
	require.Equal(t, http.StatusCreated, code, string(b))
	var old SessionCreated
	require.NoError(t, json.Unmarshal(b, &old))
	sessionRun(t, c1, old.ID, map[string]any{"code": "x = 42"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, first.Shutdown(ctx))
	require.ErrorIs(t, <-served, http.ErrServerClosed)

	time.Sleep(2 * time.Millisecond) // the next daemon starts in a later millisecond
	s, _, c := startServer(t, o, r)
	bare, _, _ := strings.Cut(old.ID, ".") // an id of before ids named their node: this node's
	for _, id := range []string{old.ID, bare} {
		for _, m := range [][2]string{{http.MethodGet, ""}, {http.MethodPost, "/run"}, {http.MethodDelete, ""}} {
			code, b := do(t, c, m[0], "/v1/sessions/"+id+m[1], map[string]any{"code": "x"})
			assert.Equal(t, http.StatusGone, code, "%s %s: %s", m[0], id, b)
			e, msg, reason := apiErr(t, b)
			assert.Equal(t, "session_lost", e, "%s %s", m[0], id)
			assert.Empty(t, reason, "not a session that ended: it is gone with its daemon")
			assert.Contains(t, msg, "session "+id+" was started by an earlier run of the agentjail daemon on this node")
			assert.Contains(t, msg, "start a new session")
		}
	}

	// This daemon's own: a session it forgot, and an id of now it never made.
	s.opts.sessionMemory = time.Millisecond
	sc := startSession(t, s, c, nil)
	code, _ = do(t, c, http.MethodDelete, "/v1/sessions/"+sc.ID, nil)
	require.Equal(t, http.StatusNoContent, code)
	time.Sleep(5 * time.Millisecond)
	for _, id := range []string{sc.ID, sameTime(sc.ID), newSessionID(s.opts.Node)} {
		code, b := do(t, c, http.MethodGet, "/v1/sessions/"+id, nil)
		assert.Equal(t, http.StatusNotFound, code, "%s: %s", id, b)
	}
	code, b = do(t, c, http.MethodGet, "/v1/sessions/s-0", nil)
	assert.Equal(t, http.StatusNotFound, code, "not an id: %s", b)
}
