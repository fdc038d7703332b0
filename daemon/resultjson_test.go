package daemon

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/daemon/harness"
	"agentjail/nsjail"
)

var trickyOutputs = []string{
	"", "plain", `a"b\c`, "\x00\x01\x08\x0c\x1f\x7f", "\n\r\t", "\xff\xfe", "cut \xe2\x82", "\u2028\u2029",
	"<script>&amp;</script>", "emoji 😀 and ü", strings.Repeat("\x00", 1000),
}

// The streamed result is the object encoding/json makes, field for field,
// and the base64 twins of the texts that are not valid UTF-8.
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
		for k, s := range map[string]string{"stdout_base64": r.Stdout, "stderr_base64": r.Stderr} {
			if !utf8.ValidString(s) {
				a[k] = base64.StdEncoding.EncodeToString([]byte(s))
			}
		}
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
		{Stdout: strings.Repeat("\xff", 16<<20), Feedback: []string{}}, // and its base64 twin
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
	var text Result
	require.NoError(t, json.Unmarshal(b, &text))
	assert.Equal(t, strings.ToValidUTF8(out, "\ufffd"), text.Stdout, "the text: U+FFFD for each bad byte")
	res, err := DecodeResult(b)
	require.NoError(t, err)
	assert.Equal(t, out, res.Stdout, "the exact bytes, from stdout_base64")
	assert.Equal(t, "ok", res.Status)
}

// Issue 21 item 6: output and file names that are not UTF-8 keep their
// exact bytes in a base64 twin (standard, padded), absent where the text
// is valid UTF-8; DecodeResult reads them back.
func TestResultBase64Twins(t *testing.T) {
	content := "x"
	r := &Result{Stdout: "\xff\xfe abc \x80", Stderr: "fine ü\n", Feedback: []string{},
		Files: []ResultFile{{Path: "bad\xffname.txt", Size: 1, Encoding: "utf-8", Content: &content}, {Path: "good.txt", Size: 1, Encoding: "utf-8", Content: &content}}}
	var b bytes.Buffer
	require.NoError(t, r.WriteJSON(&b))
	var m map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &m), b.String())
	assert.Equal(t, "\ufffd\ufffd abc \ufffd", m["stdout"], "the text as before")
	assert.Equal(t, "//4gYWJjIIA=", m["stdout_base64"])
	assert.NotContains(t, m, "stderr_base64", "absent for valid UTF-8")
	files := m["files"].([]any)
	assert.Equal(t, "bad\ufffdname.txt", files[0].(map[string]any)["path"])
	assert.Equal(t, base64.StdEncoding.EncodeToString([]byte("bad\xffname.txt")), files[0].(map[string]any)["path_base64"])
	assert.NotContains(t, files[1], "path_base64")

	got, err := DecodeResult(b.Bytes())
	require.NoError(t, err)
	assert.Equal(t, r.Stdout, got.Stdout)
	assert.Equal(t, r.Stderr, got.Stderr)
	assert.Equal(t, r.Files, got.Files)

	// Lengths that leave 0, 1 and 2 bytes over a chunk of 3 KiB.
	for _, n := range []int{1, 2, 3, 3 << 10, 3<<10 + 1, 3<<10 + 2, 100000} {
		out := strings.Repeat("\x80", n)
		var b bytes.Buffer
		require.NoError(t, (&Result{Stdout: out}).WriteJSON(&b))
		require.NoError(t, json.Unmarshal(b.Bytes(), &m))
		assert.Equal(t, base64.StdEncoding.EncodeToString([]byte(out)), m["stdout_base64"], n)
	}

	_, err = DecodeResult([]byte(`{"stdout":"x","stdout_base64":"!!"}`))
	assert.ErrorContains(t, err, "stdout_base64: not valid base64")
}
