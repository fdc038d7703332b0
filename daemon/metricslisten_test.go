package daemon

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/nsjail"
)

func TestMetricsListenConfig(t *testing.T) {
	for _, tc := range []struct{ listen, addr string }{
		{"", ""},
		{":9464", "127.0.0.1:9464"},
		{"127.0.0.1:9464", "127.0.0.1:9464"},
		{"[::1]:9464", "[::1]:9464"},
		{"0.0.0.0:9464", "0.0.0.0:9464"},
		{"localhost:9464", "localhost:9464"},
	} {
		c, err := parseConfig([]byte("[metrics]\nlisten = \"" + tc.listen + "\"\n"))
		require.NoError(t, err, tc.listen)
		assert.Equal(t, tc.addr, c.MetricsAddr(), tc.listen)
	}
	assert.Empty(t, DefaultConfig().MetricsAddr(), "off by default")
	for listen, want := range map[string]string{
		"9464":             `line 2: metrics.listen: "9464" is not host:port`,
		":0":               `port "0" of ":0" is not a number from 1 to 65535`,
		":99999":           `port "99999"`,
		"example.com:9464": `host "example.com" of "example.com:9464" is not an IP address or localhost`,
	} {
		_, err := parseConfig([]byte("[metrics]\nlisten = \"" + listen + "\"\n"))
		if assert.Error(t, err, listen) {
			assert.Contains(t, err.Error(), want)
		}
	}
}

// The metrics listener serves GET /metrics and nothing else: no run, no
// session, no health, whatever the method.
func TestMetricsListenerServesMetricsOnly(t *testing.T) {
	ran := false
	srv, _, _ := startServer(t, testOptions(), &fakeJailer{run: func(ctx context.Context, s *nsjail.Spec) (*nsjail.Result, error) {
		ran = true
		return okResult(s), nil
	}})
	cfg := DefaultConfig()
	cfg.Metrics.Listen = ":0"
	l, err := ListenMetrics(cfg)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(l.Addr().String(), "127.0.0.1:"), "a listen without host is on loopback: %s", l.Addr())
	hs := srv.MetricsServer()
	go func() { _ = hs.Serve(l) }()
	t.Cleanup(func() { _ = hs.Close() })
	base := "http://" + l.Addr().String()

	get := func(method, path, body string) (int, string) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := get("GET", "/metrics", "")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "agentjail_running_jails 0")
	for _, p := range []struct{ method, path string }{
		{"POST", "/v1/run"}, {"GET", "/v1/run"}, {"GET", "/v1/health"}, {"GET", "/v1/environments"},
		{"POST", "/v1/sessions"}, {"GET", "/v1/sessions/x"}, {"GET", "/"}, {"GET", "/metrics/"}, {"GET", "/debug/pprof/"},
	} {
		code, _ := get(p.method, p.path, `{"code":"print(1)"}`)
		assert.Equal(t, http.StatusNotFound, code, "%s %s", p.method, p.path)
	}
	code, _ = get("POST", "/metrics", "")
	assert.Equal(t, http.StatusMethodNotAllowed, code)
	assert.False(t, ran, "a request through the metrics listener ran a program")
}
