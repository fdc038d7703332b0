package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/daemon/harness"
	"agentjail/nsjail"
)

var trickyOutputs = []string{
	"", "plain", `a"b\c`, "\x00\x01\x08\x0c\x1f\x7f", "\n\r\t", "\xff\xfe", "cut \xe2\x82", "\u2028\u2029",
	"<script>&amp;</script>", "emoji 😀 and ü", strings.Repeat("\x00", 1000),
}

// The streamed result is the object encoding/json makes, field for field.
func TestResultWriteJSONSameObject(t *testing.T) {
	peak := int64(3 << 20)
	full := &Result{ID: "j-1", Status: "error", ExitCode: 1, Stdout: "out\x00\xff", Stderr: "Traceback…\n",
		PeakMemoryBytes: &peak, Exception: &harness.Exception{Type: "ValueError", Message: "<bad>", Line: 3},
		Feedback: []string{"a", "b"}, Files: []ResultFile{{Path: "x", Size: 1, Encoding: "utf-8", Content: new(string)},
			{Path: "gone", Error: "no such file"}, {Path: "b", Size: 5, Encoding: "base64", Content: ptr(`"<\x00>"`)}},
		Tests: &harness.TestsResult{Total: 1}}
	for _, r := range []*Result{full, {}, {Stdout: strings.Join(trickyOutputs, "|"), Stderr: trickyOutputs[3]}} {
		want, err := json.Marshal(r)
		require.NoError(t, err)
		var got bytes.Buffer
		require.NoError(t, r.WriteJSON(&got))
		assert.True(t, strings.HasSuffix(got.String(), "}\n"), "one line")
		var a, b map[string]any
		require.NoError(t, json.Unmarshal(want, &a))
		require.NoError(t, json.Unmarshal(got.Bytes(), &b), got.String())
		assert.Equal(t, a, b)
		e, err := r.encode()
		require.NoError(t, err)
		assert.Equal(t, int64(got.Len()), e.len(), "the Content-Length pass")
	}
}

// Streaming keeps the answer out of memory: 16 MiB of NUL bytes (96 MiB of
// JSON) are written with next to no allocation.
// So is a collected file's content (a file of NULs is valid UTF-8: it is
// sent as text).
func TestResultWriteJSONDoesNotBuffer(t *testing.T) {
	nul := strings.Repeat("\x00", 16<<20)
	for _, r := range []*Result{
		{Stdout: nul, Feedback: []string{}},
		{Files: []ResultFile{{Path: "nul", Size: 16 << 20, Encoding: "utf-8", Content: &nul}}, Feedback: []string{}},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		require.NoError(t, r.WriteJSON(io.Discard))
		runtime.ReadMemStats(&after)
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated while writing")
	}
}

// Through the daemon: the Content-Length is right and the output arrives
// whole, NUL bytes and invalid UTF-8 included.
func TestAPIStreamsOutput(t *testing.T) {
	out := strings.Repeat("\x00a\xff", 100000)
	_, _, c := startServer(t, testOptions(), &fakeJailer{run: func(ctx context.Context, s *nsjail.Spec) (*nsjail.Result, error) {
		res := okResult(s)
		res.Stdout = []byte(out)
		return res, nil
	}})
	resp, b := post(t, c, `{"code":"pass"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	assert.Equal(t, int64(len(b)), resp.ContentLength)
	var res Result
	require.NoError(t, json.Unmarshal(b, &res))
	assert.Equal(t, strings.ToValidUTF8(out, "\ufffd"), res.Stdout)
	assert.Equal(t, "ok", res.Status)
}
