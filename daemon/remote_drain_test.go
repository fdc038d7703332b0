package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/nsjail"
)

// TestDrain: POST /v1/drain on the socket turns health 503 draining at
// once, refuses new runs with 503 draining, lets the run in flight
// finish, and is not reachable through the remote listener.
func TestDrain(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	j := &fakeJailer{run: func(ctx context.Context, s *nsjail.Spec) (*nsjail.Result, error) {
		started <- struct{}{}
		<-release
		return okResult(s), nil
	}}
	e := startRemote(t, testOptions(), j, nil)
	done := make(chan int, 1)
	go func() {
		resp, _ := e.call(t, tokenA, "POST", "/v1/run", `{"code":"print(1)"}`)
		done <- resp.StatusCode
	}()
	<-started

	resp, body := e.call(t, tokenA, "POST", "/v1/drain", "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "no drain through the remote listener: %s", body)
	resp, _ = e.call(t, "", "GET", "/v1/health", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)

	code, b := do(t, e.sock, http.MethodPost, "/v1/drain", nil)
	require.Equal(t, http.StatusOK, code, string(b))
	resp, body = e.call(t, "", "GET", "/v1/health", "")
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
	var h struct{ Status string }
	require.NoError(t, json.Unmarshal([]byte(body), &h))
	assert.Equal(t, "draining", h.Status)
	resp, body = e.call(t, tokenA, "POST", "/v1/run", `{"code":"print(2)"}`)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
	c, _, _ := apiErr(t, []byte(body))
	assert.Equal(t, "draining", c)
	assert.Equal(t, "0", resp.Header.Get("Agentjail-Free-Slots"))
	_, body = e.call(t, tokenA, "GET", "/v1/capacity", "")
	assert.Contains(t, body, `"draining":true`)

	close(release)
	select {
	case code := <-done:
		assert.Equal(t, http.StatusOK, code, "the run in flight finished")
	case <-time.After(10 * time.Second):
		t.Fatal("the run in flight did not finish")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, e.s.Shutdown(ctx), "a drained server shuts down")
}
