package networld

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

// Every server of the world answers from D, directly (no proxy): what the
// egress tests show before each blocked case.
func TestWorldReachableFromD(t *testing.T) {
	w := New(t)
	for _, c := range []struct{ url, want string }{
		{"http://" + EchoAddr + "/x", `"host":"` + EchoAddr + `"`},
		{"http://" + EchoName + ":8080/", `"host":"` + EchoName + `:8080"`},
		{"https://" + EchoName + "/", `"sni":"` + EchoName + `"`},
		{"https://" + IndexName + "/simple/", WheelProject},
		{"http://" + MetadataV4 + "/latest/meta-data/", MetadataBody},
		{"http://[" + MetadataV6 + "]/", MetadataBody},
		{"http://[::ffff:" + MetadataV4 + "]/", MetadataBody},
		{"http://" + MetadataName + "/", MetadataBody},
		{"http://" + PrivateAddr + ":8080/", PrivateBody},
		{"http://" + SelfName + ":" + DPort + "/", DaemonSideBody},
		{"http://[" + DAddr6 + "]:" + DPort + "/", DaemonSideBody},
		{"http://127.0.0.1:" + DPort + "/", DaemonSideBody},
		{"http://[::1]:" + DPort + "/", DaemonSideBody},
	} {
		body, err := w.GetIn(w.D, c.url)
		if assert.NoError(t, err, c.url) {
			assert.Contains(t, body, c.want, c.url)
		}
	}
	// The v4-mapped name reaches the metadata server too.
	ips, err := w.ResolverIn(w.D).LookupIPAddr(context.Background(), MappedName)
	require.NoError(t, err)
	require.Len(t, ips, 1)
	assert.Equal(t, MetadataV4, ips[0].IP.String(), "Go shows ::ffff:a.b.c.d as a.b.c.d")
	// D's own servers are not in U: from U the daemon's loopback is not there.
	_, err = w.GetIn(w.U, "http://127.0.0.1:"+DPort+"/")
	assert.Error(t, err, "U has no server on its loopback")
}

// The DNS server answers the world's names, rebinds with TTL 0, and logs
// every question; a name it does not have is NXDOMAIN.
func TestWorldDNS(t *testing.T) {
	w := New(t)
	r := w.ResolverIn(w.D)
	ctx := context.Background()
	look := func(name string) []string {
		ips, err := r.LookupHost(ctx, name)
		require.NoError(t, err, name)
		slices.Sort(ips)
		return ips
	}
	assert.Equal(t, []string{IndexAddr}, look(IndexName))
	assert.Equal(t, []string{MetadataV4, MetadataV6}, look(MetadataName))
	assert.Equal(t, []string{MetadataV6}, look(Metadata6))
	assert.Equal(t, []string{DAddr6, DAddr4}, look(SelfName)) // sorted as strings
	assert.Equal(t, []string{PrivateAddr}, look(PrivateName))
	var seen []string
	for range 4 {
		ips, err := r.LookupIP(ctx, "ip4", RebindName)
		require.NoError(t, err)
		seen = append(seen, ips[0].String())
	}
	assert.Equal(t, []string{EchoAddr, MetadataV4, EchoAddr, MetadataV4}, seen, "rebind.test alternates")
	_, err := r.LookupHost(ctx, "nowhere.test")
	assert.Error(t, err)
	assert.True(t, w.Asked("nowhere.test"))
	assert.True(t, w.Asked(IndexName))
	assert.False(t, w.Asked("never-asked.test"))
	assert.Contains(t, w.Queries(), Query{Name: IndexName, Type: "A"})
}

// Debian's pip installs the world's wheel from its index over HTTPS with
// the test CA (from D, without a proxy), and the package imports.
func TestWorldWheelInstallsWithPip(t *testing.T) {
	systest.Require(t, systest.Pip)
	w := New(t)
	target := t.TempDir()
	cmd := exec.Command("nsenter", "--net=/run/netns/"+w.D, "--", "/usr/bin/python3", "-m", "pip", "install",
		"--disable-pip-version-check", "--no-cache-dir", "--no-input", "--target", target,
		"--index-url", "https://"+IndexAddr+"/simple", "--cert", w.CAFile, WheelProject)
	// This host's environment may name its own CA bundle for requests
	// (REQUESTS_CA_BUNDLE beats --cert) and pip options: none of them.
	cmd.Env = []string{"PATH=/usr/bin:/bin", "PIP_CONFIG_FILE=/dev/null", "HOME=" + target}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	imp := exec.Command("/usr/bin/python3", "-I", "-c", "import sys; sys.path.insert(0, sys.argv[1]); import "+WheelProject+"; print("+WheelProject+".VALUE)", target)
	out, err = imp.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, WheelValue, strings.TrimSpace(string(out)))
	_, err = os.Stat(filepath.Join(target, WheelProject+"-"+WheelVersion+".dist-info", "RECORD"))
	assert.NoError(t, err)
}

// The echo server says which Host it saw, and /bytes sends what it is
// asked for.
func TestWorldEcho(t *testing.T) {
	w := New(t)
	body, err := w.GetIn(w.D, "http://"+EchoName+"/p?q=1")
	require.NoError(t, err)
	var e Echo
	require.NoError(t, json.Unmarshal([]byte(body), &e))
	assert.Equal(t, Echo{Server: "echo", Host: EchoName, Method: "GET", Path: "/p?q=1"}, e)
	body, err = w.GetIn(w.D, "http://"+EchoAddr+"/bytes?n=1000000")
	require.NoError(t, err)
	assert.Len(t, body, 1000000)
	var got string
	resp, err := w.ClientIn(w.D).Post("http://"+EchoName+"/sink", "application/octet-stream", strings.NewReader(strings.Repeat("x", 3<<20)))
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got = strings.TrimSpace(string(b))
	assert.Equal(t, "3145728", got, "the sink reads the whole body")
}

// Closing a world leaves no namespace, no process in one, no link; and
// the check sees a process left in one.
func TestWorldLeavesNothing(t *testing.T) {
	systest.Require(t, systest.Root, systest.NetNS)
	w, err := Start(t.TempDir())
	require.NoError(t, err)
	inodes := w.Inodes()
	assert.NotContains(t, inodes, uint64(0))
	sleeper := exec.Command("nsenter", "--net=/run/netns/"+w.D, "--", "sleep", "60")
	require.NoError(t, sleeper.Start())
	for i := 0; i < 500 && len(processesIn(inodes[0])) == 0; i++ {
		time.Sleep(10 * time.Millisecond) // nsenter enters D, then execs sleep
	}
	require.NoError(t, w.Close())
	left := w.Leftovers(inodes)
	assert.Len(t, left, 1, "the sleeping process in D: %v", left)
	_ = sleeper.Process.Kill()
	_ = sleeper.Wait()
	assert.Empty(t, w.Leftovers(inodes))
}
