package daemon

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRemoteSessionBelongsToItsName: a session made with alice's token
// is bob's 404 (the 404 of an id that never existed) for reading,
// calling and deleting, and stays alice's.
func TestRemoteSessionBelongsToItsName(t *testing.T) {
	r := realRunner(t)
	o := testOptions()
	o.MaxSessions, o.Node, o.Advertise = 4, "node-a", "node-a.example:8443"
	e := startRemote(t, o, r, nil)
	resp, body := e.call(t, tokenA, "POST", "/v1/sessions", `{}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, body)
	assert.NotEmpty(t, resp.Header.Get("Agentjail-Free-Slots"))
	var sc SessionCreated
	require.NoError(t, json.Unmarshal([]byte(body), &sc))
	defer e.call(t, tokenA, "DELETE", "/v1/sessions/"+sc.ID, "")
	assert.Equal(t, "node-a", sc.Node)
	assert.Equal(t, "node-a.example:8443", sc.Endpoint)
	assert.Equal(t, "node-a", sessionNode(sc.ID), sc.ID)
	resp, body = e.call(t, tokenA, "POST", "/v1/sessions/"+sc.ID+"/run", `{"code":"secret = 42"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)

	unknownID := sameTime(sc.ID) // made at the same millisecond: not an earlier daemon's (session_lost.go)
	_, unknown := e.call(t, tokenB, "GET", "/v1/sessions/"+unknownID, "")
	unknown = strings.ReplaceAll(unknown, unknownID, sc.ID)
	for _, m := range [][3]string{{"GET", "", ""}, {"POST", "/run", `{"code":"secret"}`}, {"DELETE", "", ""}} {
		resp, body := e.call(t, tokenB, m[0], "/v1/sessions/"+sc.ID+m[1], m[2])
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, "%s by another NAME", m[0])
		assert.Equal(t, unknown, body, "%s of another NAME's session is the 404 of an id that never existed", m[0])
	}
	_, body = e.call(t, tokenB, "GET", "/v1/sessions", "")
	assert.JSONEq(t, `{"sessions":[]}`, body, "bob lists none")
	resp, body = e.call(t, tokenA, "POST", "/v1/sessions/"+sc.ID+"/run", `{"code":"secret"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var a callAnswer
	require.NoError(t, json.Unmarshal([]byte(body), &a))
	assert.Equal(t, "42", val(&a), "bob's DELETE did not end it")
}

// TestRemoteSessionElsewhere: a session id of another node is 421
// session_elsewhere naming that node, after the token check.
func TestRemoteSessionElsewhere(t *testing.T) {
	o := testOptions()
	o.Node = "node-a"
	e := startRemote(t, o, fakeOK(), nil)
	id := "s-01ARZ3NDEKTSV4RRFFQ69G5FAV.node-b.example"
	for _, m := range [][3]string{{"GET", "", ""}, {"POST", "/run", `{"code":"1"}`}, {"DELETE", "", ""}} {
		resp, body := e.call(t, tokenA, m[0], "/v1/sessions/"+id+m[1], m[2])
		assert.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode, body)
		code, msg, _ := apiErr(t, []byte(body))
		assert.Equal(t, "session_elsewhere", code)
		assert.Contains(t, msg, "node-b.example")
		var e2 struct{ Error struct{ Node string } }
		require.NoError(t, json.Unmarshal([]byte(body), &e2))
		assert.Equal(t, "node-b.example", e2.Error.Node)
		resp, _ = e.call(t, "", m[0], "/v1/sessions/"+id+m[1], m[2])
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no token: nothing is told")
	}
	now := newSessionID("node-a")
	resp, body := e.call(t, tokenA, "GET", "/v1/sessions/"+now, "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, body)
	bare, _, _ := strings.Cut(now, ".")
	resp, body = e.call(t, tokenA, "GET", "/v1/sessions/"+bare, "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "an id without a node is this node's: %s", body)
	resp, body = e.call(t, tokenA, "GET", "/v1/sessions/s-01ARZ3NDEKTSV4RRFFQ69G5FAV", "")
	assert.Equal(t, http.StatusGone, resp.StatusCode, "an id without a node is this node's; this one is an earlier daemon's: %s", body)
	code, _, _ := apiErr(t, []byte(body))
	assert.Equal(t, "session_lost", code)
}
