package daemon

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"log/slog"
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
	"agentjail/nsjail"
)

// openTestEnvironments opens the configuration's environments on a runner
// of their own (as `agentjail serve` does), closed at the end of the test,
// and serves them.
func openTestEnvironments(t *testing.T, toml string) (*Config, map[string]*Environment, *nsjail.Runner, *Server, string) {
	t.Helper()
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	cfg, err := parseConfig([]byte(toml))
	require.NoError(t, err)
	require.NoError(t, cfg.CheckHost("", ""))
	r, err := nsjail.NewRunner()
	require.NoError(t, err)
	envs := cfg.Policy().Environments
	stop, err := OpenEnvironments(cfg, envs, r, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { stop(); r.Close() })
	o := testOptions()
	o.Policy = cfg.Policy()
	o.Policy.Environments = envs
	s, sock, _ := startServer(t, o, r)
	return cfg, envs, r, s, sock
}

// A virtualenv made as an operator would (--system-site-packages, no
// network), with a package of its own, is an environment: a run in it
// imports the package, a run in "default" cannot, warm and cold.
func TestVirtualenvEnvironment(t *testing.T) {
	d := mountDir(t)
	venv := filepath.Join(d, "venv")
	out, err := exec.Command("/usr/bin/python3", "-m", "venv", "--system-site-packages", "--without-pip", venv).CombinedOutput()
	require.NoError(t, err, string(out))
	pkg := filepath.Join(venv, "lib", "python3.11", "site-packages", "ajvenvpkg")
	require.NoError(t, os.MkdirAll(pkg, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(pkg, "__init__.py"), []byte("VALUE = 42\n"), 0o644))

	_, envs, _, _, sock := openTestEnvironments(t, `[environments.venv]
python = "`+venv+`/bin/python"
read_only_mounts = ["`+venv+`"]
env = { AJ_ENV = "from-the-environment" }
`)
	assert.Equal(t, "3.11.2", envs["venv"].PythonVersion)
	assert.Contains(t, envs["venv"].Packages, "ajvenvpkg")
	assert.NotContains(t, envs["default"].Packages, "ajvenvpkg")
	c := HTTPClient(sock)
	code := "import os, sys\nprint(sys.prefix, os.environ.get('AJ_ENV'))\nimport ajvenvpkg\nprint(ajvenvpkg.VALUE)"
	for _, start := range []string{"warm", "cold"} {
		res := runJSON(t, c, map[string]any{"code": code, "environment": "venv", "start": start})
		assert.Equal(t, "ok", res.Status, res.Stderr)
		assert.Equal(t, venv+" from-the-environment\n42\n", res.Stdout, start)
		assert.Equal(t, "venv", res.Environment)
		assert.Equal(t, start, res.Start)

		// The request's env overrides the environment's.
		res = runJSON(t, c, map[string]any{"code": code, "environment": "venv", "start": start, "env": map[string]string{"AJ_ENV": "mine"}})
		assert.Equal(t, venv+" mine\n42\n", res.Stdout, start)

		res = runJSON(t, c, map[string]any{"code": code, "start": start})
		assert.Equal(t, "error", res.Status, start)
		assert.Equal(t, "default", res.Environment)
		require.NotNil(t, res.Exception)
		assert.Equal(t, "ModuleNotFoundError", res.Exception.Type, start)
		require.NotEmpty(t, res.Feedback)
		assert.Contains(t, res.Feedback[0], "'ajvenvpkg' is not installed in environment 'default', which has the standard library and ", "what is true of the environment")
	}

	resp, body := post(t, c, `{"code":"pass","environment":"science"}`)
	assert.Equal(t, 400, resp.StatusCode)
	assert.Contains(t, string(body), `environment: unknown environment \"science\"; this daemon has: default, venv`)

	// GET /v1/environments lists both.
	resp, err = c.Get("http://agentjail/v1/environments")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(b), `"name":"venv","python":"`+venv+`/bin/python","python_version":"3.11.2"`)

	// Its font cache: "building", then "built" where matplotlib is (its
	// jails replaced), "none" where it is not.
	want := FontCacheNone
	if slices.Contains(envs["venv"].Packages, "matplotlib") {
		want = FontCacheBuilt
	}
	require.Eventually(t, func() bool {
		var got struct {
			Environments []EnvironmentInfo `json:"environments"`
		}
		resp, err := c.Get("http://agentjail/v1/environments")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		if json.NewDecoder(resp.Body).Decode(&got) != nil || len(got.Environments) != 2 {
			return false
		}
		for _, e := range got.Environments {
			if e.FontCache != want {
				require.Equal(t, FontCacheBuilding, e.FontCache, e.Name)
				return false
			}
		}
		return true
	}, 3*time.Minute, 20*time.Millisecond, "font_cache %q", want)
	res := runJSON(t, c, map[string]any{"code": "pass", "environment": "venv"})
	assert.Equal(t, "warm", res.Start, "its zygote replaced and up")
}

// A preload module that does not import stops the start, naming it and
// its error.
func TestPreloadThatDoesNotImportStopsTheStart(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	cfg, err := parseConfig([]byte("[environments.x]\npreload = [\"json\", \"no_such_module_aj\"]\n"))
	require.NoError(t, err)
	r, err := nsjail.NewRunner()
	require.NoError(t, err)
	defer r.Close()
	_, err = OpenEnvironments(cfg, cfg.Policy().Environments, r, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `environments.x: preload: "no_such_module_aj" does not import: ModuleNotFoundError: No module named 'no_such_module_aj'`)
	assert.NotContains(t, err.Error(), `"json"`)
}

// The scientific stack through the daemon, in the default environment as
// the daemon opens it (its /etc, its font cache) and in one that preloads
// it, warm and cold: a CSV read by pandas, a chart collected as a PNG,
// numpy past the memory limit, a library's thread pool under pids 16.
func TestScientificStackThroughTheDaemon(t *testing.T) {
	systest.Require(t, systest.Scientific)
	_, envs, r, _, sock := openTestEnvironments(t, `[environments.science]
preload = ["numpy", "pandas", "matplotlib.pyplot"]
`)
	for _, name := range []string{"default", "science"} {
		require.Eventually(t, func() bool { return envs[name].CurrentEtc().MatplotlibCache != "" }, 2*time.Minute, 10*time.Millisecond,
			"%s: the font cache was built once, in the background", name)
		require.Eventually(t, func() bool {
			_, up := r.WarmInfo(name)
			return up
		}, time.Minute, 10*time.Millisecond, "%s: the zygote with it is up", name)
	}
	c := HTTPClient(sock)
	code := `import sys
preloaded = "numpy" in sys.modules
import numpy, pandas, matplotlib.pyplot as plt
df = pandas.read_csv("data.csv")
print(df.describe().loc["mean", "b"], len(df))
plt.plot(df["a"], df["b"]); plt.savefig("chart.png")
print(preloaded)
`
	for _, env := range []string{"default", "science"} {
		for _, start := range []string{"warm", "cold"} {
			what := env + "/" + start
			// The default limits but time: importing the stack takes
			// seconds of CPU under emulation (the VM suite's TCG).
			slow := map[string]any{"wall_time_ms": 120000, "cpu_time_ms": 120000}
			res := runJSON(t, c, map[string]any{"code": code, "environment": env, "start": start, "limits": slow,
				"files": []map[string]string{{"path": "data.csv", "content": "a,b\n1,2\n3,4\n5,6\n"}}, "collect": []string{"chart.png"}})
			require.Equal(t, "ok", res.Status, what+": "+res.KillReason+": "+res.Stderr)
			assert.Equal(t, start, res.Start, what)
			assert.Equal(t, "4.0 3\n"+map[bool]string{true: "True", false: "False"}[env == "science" && start == "warm"]+"\n", res.Stdout, what)
			assert.Empty(t, res.Stderr, what+": no warning (matplotlib's config and cache)")
			assert.Empty(t, res.Feedback, what+": nothing blamed on the program")
			require.Len(t, res.Files, 1, what)
			png, err := base64.StdEncoding.DecodeString(*res.Files[0].Content)
			require.NoError(t, err)
			require.True(t, bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")), what+": a PNG")
			assert.Equal(t, [2]uint32{640, 480}, [2]uint32{binary.BigEndian.Uint32(png[16:20]), binary.BigEndian.Uint32(png[20:24])}, what)

			res = runJSON(t, c, map[string]any{"code": "import numpy\nx = numpy.ones((300 << 20) // 8)\nprint('survived')",
				"environment": env, "start": start, "limits": map[string]any{"memory_bytes": 128 << 20, "wall_time_ms": 120000, "cpu_time_ms": 120000}})
			assert.Equal(t, "killed", res.Status, what)
			assert.Equal(t, "memory_limit", res.KillReason, what)
			assert.NotContains(t, res.Stdout, "survived")
			assert.True(t, len(res.Feedback) > 0 && strings.Contains(strings.Join(res.Feedback, " "), "memory"), what+": %q", res.Feedback)

			res = runJSON(t, c, map[string]any{"code": "import numpy, pandas\nprint(numpy.ones(1000).sum())",
				"environment": env, "start": start, "limits": map[string]any{"pids": 16, "wall_time_ms": 120000, "cpu_time_ms": 120000}})
			assert.Equal(t, "ok", res.Status, what+": "+res.KillReason+": "+res.Stderr)
			assert.Equal(t, "1000.0\n", res.Stdout, what)
		}
	}
}
