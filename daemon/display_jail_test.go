package daemon

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/daemon/harness"
	"agentjail/internal/systest"
	"agentjail/nsjail"
)

// displayServer serves the default environment and "science", which
// preloads matplotlib.pyplot and pandas, once both zygotes are up (as
// `agentjail serve` opens them), with sessions.
func displayServer(t testing.TB) (*Server, *http.Client) {
	t.Helper()
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp, systest.Scientific)
	cfg, err := parseConfig([]byte("[environments.science]\npreload = [\"numpy\", \"pandas\", \"matplotlib.pyplot\"]\n"))
	require.NoError(t, err)
	require.NoError(t, cfg.CheckHost("", ""))
	r, err := nsjail.NewRunner()
	require.NoError(t, err)
	envs := cfg.Policy().Environments
	stop, err := OpenEnvironments(cfg, envs, r, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { stop(); r.Close() })
	for _, name := range []string{"default", "science"} {
		require.Eventually(t, func() bool {
			_, up := r.WarmInfo(name)
			return up && envs[name].CurrentEtc().MatplotlibCache != ""
		}, 2*time.Minute, 10*time.Millisecond, "%s: its zygote is up, its font cache built", name)
	}
	o := testOptions()
	o.Policy = cfg.Policy()
	o.Policy.Environments = envs
	o.MaxSessions = 4
	s, _, c := startServer(t, o, r)
	return s, c
}

// BenchmarkDisplayPlot: a line chart shown with plt.show() in the
// environment that preloads matplotlib.pyplot, warm and cold, and a warm
// `pass` there; wall-ms/op is the mean of the results' wall_time_ms
// (docs/benchmarks/2026-11.md has the figures):
// go test -run '^$' -bench DisplayPlot ./daemon
func BenchmarkDisplayPlot(b *testing.B) {
	_, c := displayServer(b)
	plot := `{"code":"import matplotlib.pyplot as plt\nplt.plot([1, 2, 3, 2])\nplt.show()","environment":"science","start":"%s","limits":{"wall_time_ms":60000,"cpu_time_ms":60000}}`
	for _, bc := range []struct{ name, body string }{
		{"warm-pass", `{"code":"pass","environment":"science","start":"warm"}`},
		{"warm-plot", fmt.Sprintf(plot, "warm")},
		{"cold-plot", fmt.Sprintf(plot, "cold")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var wall float64
			n := 0
			for b.Loop() {
				resp, body := post(b, c, bc.body)
				var res Result
				if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &res) != nil || res.Status != "ok" {
					b.Fatal(string(body))
				}
				wall += res.WallTimeMs
				n++
			}
			b.ReportMetric(wall/float64(n), "wall-ms/op")
		})
	}
}

// pngSize is the width and height in a PNG's IHDR chunk.
func pngSize(t *testing.T, d harness.Display) [2]uint32 {
	t.Helper()
	require.Equal(t, "image/png", d.Mime)
	png, err := base64.StdEncoding.DecodeString(d.Data)
	require.NoError(t, err)
	require.Equal(t, int64(len(png)), d.Bytes, "bytes: the decoded image's")
	require.True(t, bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR")), "a PNG")
	return [2]uint32{binary.BigEndian.Uint32(png[16:20]), binary.BigEndian.Uint32(png[20:24])}
}

var slowLimits = map[string]any{"wall_time_ms": 120000, "cpu_time_ms": 120000} // the stack's imports under emulation

// Figures come back as PNG of the figure's size, in order, warm and cold,
// with and without matplotlib preloaded: one left open at the end, two
// plt.show() calls; a program without matplotlib gets [] and never
// imports it; past display_bytes the entries are dropped and the result
// says so.
func TestDisplayFiguresInRuns(t *testing.T) {
	_, c := displayServer(t)
	open := "import matplotlib.pyplot as plt\nprint(plt.get_fignums())\nplt.figure(figsize=(4, 3), dpi=100)\nplt.plot([1, 2, 3])\nprint(plt.gcf().number)\n"
	twice := "import matplotlib.pyplot as plt\nplt.figure(figsize=(2, 2), dpi=100); plt.plot([1, 2]); plt.show()\n" +
		"plt.figure(figsize=(3, 2), dpi=100); plt.plot([2, 1]); plt.show()\nprint(plt.get_fignums())\n"
	for _, env := range []string{"default", "science"} {
		for _, start := range []string{"warm", "cold"} {
			what := env + "/" + start
			run := func(code string, limits map[string]any) *Result {
				res := runJSON(t, c, map[string]any{"code": code, "environment": env, "start": start, "limits": limits})
				require.Equal(t, "ok", res.Status, what+": "+res.Stderr)
				assert.Empty(t, res.Stderr, what+": no warning (Agg cannot show)")
				return res
			}
			res := run(open, slowLimits)
			require.Len(t, res.Display, 1, what)
			assert.Equal(t, [2]uint32{400, 300}, pngSize(t, res.Display[0]), what)
			assert.False(t, res.DisplayTruncated, what)
			assert.Equal(t, "[]\n1\n", res.Stdout, what+": the zygote's own figure (warm.py) is gone")

			res = run(twice, slowLimits)
			require.Len(t, res.Display, 2, what)
			assert.Equal(t, [2]uint32{200, 200}, pngSize(t, res.Display[0]), what)
			assert.Equal(t, [2]uint32{300, 200}, pngSize(t, res.Display[1]), what)
			assert.Equal(t, "[]\n", res.Stdout, what+": shown figures are closed")

			res = run("import sys\nprint('matplotlib' in sys.modules)", nil)
			assert.Equal(t, []harness.Display{}, res.Display, what)
			assert.False(t, res.DisplayTruncated, what)
			assert.Equal(t, map[string]string{"default": "False\n", "science": map[string]string{"warm": "True\n", "cold": "False\n"}[start]}[env], res.Stdout,
				what+": matplotlib is imported only where it was preloaded")

			res = run(open, map[string]any{"wall_time_ms": 120000, "cpu_time_ms": 120000, "display_bytes": 1000})
			assert.Equal(t, []harness.Display{}, res.Display, what)
			assert.True(t, res.DisplayTruncated, what)
		}
	}
}

// A session's calls: a DataFrame as the trailing value comes back as
// HTML beside its text value; a call's figures are its own.
func TestDisplayInSessions(t *testing.T) {
	s, c := displayServer(t)
	for _, env := range []string{"default", "science"} {
		for _, start := range []string{"warm", "cold"} {
			what := env + "/" + start
			sc := startSession(t, s, c, map[string]any{"environment": env, "start": start, "limits": map[string]any{"cpu_time_ms": 240000}})
			call := func(code string) *callAnswer {
				a := sessionRun(t, c, sc.ID, map[string]any{"code": code, "limits": slowLimits})
				require.Equal(t, "ok", a.Status, what+": "+a.Stderr)
				return a
			}
			a := call("import pandas as pd\ndf = pd.DataFrame({'a': [1, 2], 'b': [3, 4]})\ndf")
			require.Len(t, a.Display, 1, what)
			assert.Equal(t, "text/html", a.Display[0].Mime, what)
			assert.Contains(t, a.Display[0].Data, "<table", what)
			assert.Equal(t, int64(len(a.Display[0].Data)), a.Display[0].Bytes, what)
			assert.Contains(t, val(a), "a  b", what+": the text value beside it")

			a = call("import matplotlib.pyplot as plt\nplt.figure(figsize=(5, 2), dpi=100); plt.plot([1, 2]); plt.show()\nplt.figure(figsize=(2, 5), dpi=100)\nplt.plot([1])\n")
			require.Len(t, a.Display, 2, what)
			assert.Equal(t, [2]uint32{500, 200}, pngSize(t, a.Display[0]), what)
			assert.Equal(t, [2]uint32{200, 500}, pngSize(t, a.Display[1]), what+": left open at the call's end")

			a = call("1 + 1")
			assert.Equal(t, []harness.Display{}, a.Display, what+": the last call's figures were closed")
			assert.Equal(t, "2", val(a), what)
		}
	}
}

// A program that writes a gigabyte of display records on the report
// channel gets at most display_bytes of them, said to be cut, and the
// daemon goes on serving.
func TestDisplayFlood(t *testing.T) {
	_, c := displayServer(t)
	code := `import os
line = b'{"t":"display","mime":"image/png","data":"' + b"A" * (1 << 20) + b'"}\n'
n = 0
try:
    for i in range(1024):
        os.write(3, line)
        n += 1
except OSError as e:
    print(e)
print("wrote", n)
`
	for _, start := range []string{"warm", "cold"} {
		res := runJSON(t, c, map[string]any{"code": code, "start": start, "limits": map[string]any{"display_bytes": nsjail.MaxDisplayBytes, "wall_time_ms": 30000}})
		assert.True(t, res.DisplayTruncated, start)
		var total int64
		for _, d := range res.Display {
			total += d.Bytes
		}
		assert.LessOrEqual(t, total, int64(nsjail.MaxDisplayBytes), start)
		assert.NotEmpty(t, res.Display, start)
		t.Logf("%s: %s, %q, %d entries, %d bytes", start, res.Status, strings.TrimSpace(res.Stdout), len(res.Display), total)
		res = runJSON(t, c, map[string]any{"code": "print(6 * 7)", "start": start})
		assert.Equal(t, "42\n", res.Stdout, start+": the daemon serves on")
	}
}
