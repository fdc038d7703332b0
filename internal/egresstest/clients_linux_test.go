package egresstest

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	nw "agentjail/internal/networld"
	"agentjail/internal/systest"
)

// Real clients get through the proxy to what the policy allows, with the
// proxy variables the daemon sets: urllib.request, http.client, Debian's
// requests, curl if present.
const clientsCode = `import os, ssl, subprocess, sys, http.client
out(kind="env", what="proxy variables", body=" ".join("%s=%s" % (k, os.environ.get(k)) for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")))
urlopen("http://echo.test/", what="urllib http")
urlopen("https://index.test/simple/ajdemo/", what="urllib https")
try:
    c = http.client.HTTPSConnection("127.0.0.1", 3128, timeout=20, context=ssl.create_default_context(cafile="ca.pem"))
    c.set_tunnel("index.test", 443)
    c.request("GET", "/simple/")
    r = c.getresponse()
    out(kind="http.client", what="http.client tunnel", status=r.status, body=r.read().decode())
except Exception as e:
    out(kind="http.client", what="http.client tunnel", status=0, error=repr(e))
try:
    c = http.client.HTTPConnection("127.0.0.1", 3128, timeout=20)
    c.request("GET", "http://echo.test/abs", headers={"Host": "echo.test"})
    r = c.getresponse()
    out(kind="http.client", what="http.client absolute", status=r.status, body=r.read().decode())
except Exception as e:
    out(kind="http.client", what="http.client absolute", status=0, error=repr(e))
if os.environ.get("WANT_REQUESTS") == "1":
    try:
        import requests
        r = requests.get("https://index.test/simple/", verify="ca.pem", timeout=20)
        out(kind="requests", what="requests", status=r.status_code, body=r.text)
    except Exception as e:
        out(kind="requests", what="requests", status=0, error=repr(e))
if os.environ.get("WANT_CURL") == "1":
    p = subprocess.run(["curl", "-sS", "--cacert", "ca.pem", "https://index.test/simple/"], capture_output=True, text=True, timeout=30)
    out(kind="curl", what="curl", status=200 if p.returncode == 0 else p.returncode, body=p.stdout, error=p.stderr)
`

func TestEgressClients(t *testing.T) {
	f := newFixture(t)
	env := map[string]string{}
	want := []string{"urllib http", "urllib https", "http.client tunnel", "http.client absolute"}
	if _, err := os.Stat("/usr/lib/python3/dist-packages/requests"); err == nil {
		env["WANT_REQUESTS"] = "1"
		want = append(want, "requests")
	} else if os.Getenv("AGENTJAIL_REQUIRE_ALL") == "1" {
		t.Fatal("Debian's python3-requests is not installed (scripts/deps --test)")
	} else {
		t.Log("Debian's python3-requests is not installed: its case is left out (scripts/deps --test)")
	}
	if _, err := exec.LookPath("curl"); err == nil {
		env["WANT_CURL"] = "1"
		want = append(want, "curl")
	}
	base := f.baseline(t, f.d)
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			r := f.run(t, f.d, mode, request{code: clientsCode, network: map[string]any{"policy": "world"}, env: env})
			require.Equal(t, "ok", r.Status, "stdout %s stderr %s", r.Stdout, r.Stderr)
			got := map[string]bool{}
			for _, o := range r.outs(t) {
				what, _ := o["what"].(string)
				if what == "proxy variables" {
					vars, _ := o["body"].(string)
					for _, v := range strings.Fields(vars) {
						assert.Contains(t, v, "=http://127.0.0.1:3128", "each proxy variable points to the proxy")
					}
					continue
				}
				body, _ := o["body"].(string)
				if assert.Equal(t, float64(200), o["status"], "%s: %v", what, o) {
					assert.True(t, strings.Contains(body, nw.WheelProject) || strings.Contains(body, `"server":"echo"`), "%s: %s", what, body)
					got[what] = true
				}
			}
			assert.ElementsMatch(t, want, keys(got))
			if assert.NotNil(t, r.Network) {
				assert.GreaterOrEqual(t, r.Network.Allowed, len(want))
				assert.Zero(t, r.Network.Blocked, "%v", r.Network.Connections)
				assert.Positive(t, r.Network.BytesReceived)
				assert.Positive(t, r.Network.BytesSent)
				for _, c := range r.Network.Connections {
					assert.Equal(t, "", c.Reason, "%s", c)
					assert.Contains(t, []string{nw.EchoAddr, nw.IndexAddr}, c.IP, "%s", c)
				}
			}
			healthy(t, f.d)
			fdsSettle(t, f.d, base, "clients "+mode)
		})
	}
	// Without a policy, the same run has no network at all, and no report.
	r := f.run(t, f.d, "warm", request{code: "urlopen('http://echo.test/')\nimport os\nout(what='vars', body=repr([k for k in os.environ if 'proxy' in k.lower()]))"})
	assert.Nil(t, r.Network, "a run without egress has network null")
	assert.NotContains(t, bodies(t, r), `"server":"echo"`)
	assert.Contains(t, r.Stdout, `"body": "[]"`, "no proxy variables without a policy")
}

const pipInstall = `import subprocess, sys
p = subprocess.run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-cache-dir", "--no-input",
    "--target", "/workspace/lib", "ajdemo", "--index-url", "https://index.test/simple", "--cert", "ca.pem"],
    capture_output=True, text=True, env=dict(os.environ, HOME="/workspace", PIP_CONFIG_FILE="/dev/null"))
out(kind="pip", what="install", status=p.returncode, body=p.stdout[-2000:], error=p.stderr[-2000:])
`

const pipImport = `import sys
sys.path.insert(0, "/workspace/lib")
import ajdemo
out(kind="import", what="import", body=str(ajdemo.VALUE))
`

// pip installs a package from the policy's index into /workspace/lib,
// and it imports: in one run (warm, cold), and across two calls of a
// session.
func TestEgressPipInstall(t *testing.T) {
	systest.Require(t, systest.Pip)
	f := newFixture(t)
	for _, mode := range []string{"warm", "cold"} {
		t.Run(mode, func(t *testing.T) {
			r := f.run(t, f.d, mode, request{code: "import os\n" + pipInstall + pipImport, network: map[string]any{"policy": "world"}})
			checkPip(t, r, true)
		})
	}
	t.Run("session", func(t *testing.T) {
		s := f.session(t, f.d, map[string]any{"policy": "world"})
		defer s.end(t)
		r := s.call(t, "import os\n"+pipInstall)
		checkPip(t, r, false)
		r = s.call(t, pipImport+"ajdemo.VALUE")
		assert.Contains(t, r.Stdout, `"body": "42"`, "stdout %s stderr %s", r.Stdout, r.Stderr)
		assert.Equal(t, "42", r.Value, "the trailing expression's repr")
		if r.Network != nil {
			assert.Empty(t, r.Network.Connections, "the import call made no connection; the install call's are not reported again")
		}
	})
}

func checkPip(t *testing.T, r result, imported bool) {
	t.Helper()
	outs := r.outs(t)
	require.NotEmpty(t, outs, "stdout %s stderr %s", r.Stdout, r.Stderr)
	assert.Equal(t, float64(0), outs[0]["status"], "pip install: %v", outs[0])
	if imported {
		require.Len(t, outs, 2, "stdout %s stderr %s", r.Stdout, r.Stderr)
		assert.Equal(t, nw.WheelValue, outs[1]["body"])
	}
	if assert.NotNil(t, r.Network) {
		assert.GreaterOrEqual(t, r.Network.Allowed, 1)
		assert.Zero(t, r.Network.Blocked, "%v", r.Network.Connections)
		for _, c := range r.Network.Connections {
			assert.Equal(t, nw.IndexName, c.Host, "%s", c)
			assert.Equal(t, 443, c.Port, "%s", c)
		}
	}
}

// An inline allow list (network.inline_allow = true in the fixture) works
// as a policy does; a bad entry and an unknown policy are 400s that say
// what to fix.
func TestEgressInlineAllow(t *testing.T) {
	f := newFixture(t)
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			r := f.run(t, f.d, mode, request{code: "urlopen('http://echo.test/')\nurlopen('http://other.test/')", network: map[string]any{"allow": []string{"echo.test:80"}}})
			require.NotNil(t, r.Network, "stdout %s stderr %s", r.Stdout, r.Stderr)
			assert.Equal(t, 1, r.Network.Allowed, "%v", r.Network.Connections)
			assert.Equal(t, 1, r.Network.Blocked, "%v", r.Network.Connections)
			assert.Contains(t, bodies(t, r), `"server":"echo"`)
		})
	}
	for _, c := range []struct {
		network map[string]any
		want    []string
	}{
		{map[string]any{"allow": []string{"echo.test"}}, []string{"echo.test", "port"}},
		{map[string]any{"allow": []string{"*.*.test:80"}}, []string{"*.*.test:80"}},
		{map[string]any{"policy": "nope"}, []string{"nope", "world", "trap"}},
	} {
		code, raw, err := f.d.Call("POST", "/v1/run", map[string]any{"code": "pass", "network": c.network}, nil)
		require.NoError(t, err)
		assert.Equal(t, 400, code, "%v: %s", c.network, raw)
		for _, w := range c.want {
			assert.Contains(t, string(raw), w, "%v", c.network)
		}
		code, raw, err = f.d.Call("POST", "/v1/sessions", map[string]any{"network": c.network}, nil)
		require.NoError(t, err)
		assert.Equal(t, 400, code, "a session, %v: %s", c.network, raw)
	}
}
