package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/daemon"
	"agentjail/internal/systest"
)

// [metrics] listen: the daemon serves GET /metrics on that TCP address,
// and nothing of the API there.
func TestServeMetricsListener(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	free, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := free.Addr().(*net.TCPAddr).Port
	free.Close()
	base := 3_000_000_000 + uint32(rand.IntN(1000))*100_000 // this test's own uids: see TestServeCrashRecovery
	d := startDaemon(t, t.TempDir(), fmt.Sprintf("[admission]\nmax_concurrent = 1\n[jail]\nuid_base = %d\nuid_count = 100000\n[metrics]\nlisten = \":%d\"\n", base, port))
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	resp, err := http.Get(url + "/metrics")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(b), "agentjail_running_jails 0")
	resp, err = http.Post(url+"/v1/run", "application/json", strings.NewReader(`{"code":"print(1)"}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "/v1/run through the metrics listener")
	assert.Contains(t, d.log.String(), fmt.Sprintf("serving metrics\" addr=http://127.0.0.1:%d/metrics", port))

	// The same start-up says what the maxima may take of the host's pids
	// (1 + 32 sessions of 1025 tasks): unless this process's cgroup
	// bounds them, as agentjail.service's TasksMax= does.
	if own := daemon.OwnPidsLimit(); own == 0 || own > daemon.HostPidMax()*3/4 {
		if daemon.HostPidMax() < 33*1025*4/3 {
			assert.Contains(t, d.log.String(), "Set TasksMax= on the service")
		}
	}
}
