package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/nsjail"
)

// event is one line of a streamed answer, with when it arrived.
type event struct {
	Event  string `json:"event"`
	Data   string `json:"data"`
	Status int    `json:"http_status"`
	Error  struct{ Code, Message string }
	at     time.Time
	raw    []byte
}

// postStream posts body to path with "stream" asked in the body and
// returns the answer's status, content type and events as they came.
func postStream(t *testing.T, c *http.Client, path string, body map[string]any) (int, string, []event) {
	t.Helper()
	body["stream"] = true
	b, err := json.Marshal(body)
	require.NoError(t, err)
	resp, err := c.Post("http://agentjail"+path, "application/json", strings.NewReader(string(b)))
	require.NoError(t, err)
	defer resp.Body.Close()
	var events []event
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		e := event{at: time.Now(), raw: append([]byte{}, sc.Bytes()...)}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), sc.Text())
		events = append(events, e)
	}
	require.NoError(t, sc.Err())
	return resp.StatusCode, resp.Header.Get("Content-Type"), events
}

// output is the streams' data joined, and the last event decoded as v.
func output(t *testing.T, events []event, v any) (stdout, stderr string) {
	t.Helper()
	require.NotEmpty(t, events)
	for i, e := range events[:len(events)-1] {
		require.Contains(t, []string{"stdout", "stderr"}, e.Event, "event %d", i)
		if e.Event == "stdout" {
			stdout += e.Data
		} else {
			stderr += e.Data
		}
	}
	last := events[len(events)-1]
	if v != nil {
		require.Equal(t, "result", last.Event, string(last.raw))
		require.NoError(t, json.Unmarshal(last.raw, v))
	}
	return stdout, stderr
}

// A program that prints a line every 100 ms for 1 s: its lines come as
// it prints them, well before it ends, then exactly one result with the
// whole output.
func TestStreamRunArrivesAsPrinted(t *testing.T) {
	_, _, c := startServer(t, testOptions(), realRunner(t))
	code := "import sys, time\nfor i in range(10):\n    print('line', i, flush=True)\n    time.sleep(0.1)\nprint('done', file=sys.stderr)"
	status, ctype, events := postStream(t, c, "/v1/run", map[string]any{"code": code})
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "application/x-ndjson", ctype)
	var res Result
	stdout, stderr := output(t, events, &res)
	assert.Equal(t, "ok", res.Status, res.Stderr)
	assert.Equal(t, res.Stdout, stdout)
	assert.Equal(t, res.Stderr, stderr)
	assert.Equal(t, "done\n", stderr)
	assert.Contains(t, stdout, "line 9\n")
	ended := events[len(events)-1].at // the program ended at most this late
	first := events[0]
	assert.Equal(t, "stdout", first.Event)
	assert.Greater(t, ended.Sub(first.at), 700*time.Millisecond, "the first line came only near the end")
	outs := 0
	for _, e := range events {
		if e.Event == "stdout" {
			outs++
		}
	}
	assert.GreaterOrEqual(t, outs, 5, "the lines came in a few lumps, not as printed")
}

// The output limit holds while streaming: the run is killed, and the
// events stop at the cap.
func TestStreamRunOutputLimit(t *testing.T) {
	_, _, c := startServer(t, testOptions(), realRunner(t))
	status, _, events := postStream(t, c, "/v1/run", map[string]any{"code": "while True: print('x' * 1000, flush=True)", "limits": map[string]any{"output_bytes": 10000}})
	require.Equal(t, http.StatusOK, status)
	var res Result
	stdout, _ := output(t, events, &res)
	assert.Equal(t, "killed", res.Status)
	assert.Equal(t, "output_limit", res.KillReason)
	assert.LessOrEqual(t, len(stdout), 10000)
	assert.Equal(t, res.Stdout, stdout)
}

// A client that stops reading its stream has its run cancelled and its
// slot freed within the stall bound, as one that hangs up.
func TestStreamStalledReaderIsCancelled(t *testing.T) {
	j := &recordingJailer{r: realRunner(t)}
	o := testOptions()
	o.streamStall = 300 * time.Millisecond
	o.Policy.Max.OutputBytes = 16 << 20
	s, sock, _ := startServer(t, o, j)
	body := `{"stream":true,"limits":{"output_bytes":16777216,"wall_time_ms":10000},"code":"import sys, time\nsys.stdout.write('x' * (8 << 20)); sys.stdout.flush(); time.sleep(60)"}`
	conn := rawPost(t, sock, len(body), body) // and never read
	sent := time.Now()
	require.Eventually(t, func() bool { j.mu.Lock(); defer j.mu.Unlock(); return len(j.results) == 1 }, 20*time.Second, 10*time.Millisecond)
	j.mu.Lock()
	res, ended := j.results[0], j.ended[0]
	j.mu.Unlock()
	assert.Equal(t, nsjail.KillCancelled, res.KillReason)
	assert.Less(t, ended.Sub(sent), 5*time.Second, "the run outlived its stalled client")
	t.Logf("the run of a stalled client ended %v after its request", ended.Sub(sent))
	require.Eventually(t, func() bool { return s.Running() == 0 }, 5*time.Second, 10*time.Millisecond, "the slot is still held")
	conn.Close()
}

// A session's call streams as a run does; the result carries the value
// and the session.
func TestStreamSessionCall(t *testing.T) {
	s, _, c := sessionServer(t, nil)
	sess := startSession(t, s, c, nil)
	code := "import time\nfor i in range(5):\n    print(i, flush=True)\n    time.sleep(0.1)\n6 * 7"
	status, _, events := postStream(t, c, "/v1/sessions/"+sess.ID+"/run", map[string]any{"code": code})
	require.Equal(t, http.StatusOK, status)
	var a callAnswer
	stdout, _ := output(t, events, &a)
	assert.Equal(t, "0\n1\n2\n3\n4\n", stdout)
	assert.Equal(t, stdout, a.Stdout)
	assert.Equal(t, "42", val(&a))
	assert.Equal(t, 1, a.Session.Calls)
	assert.Greater(t, events[len(events)-1].at.Sub(events[0].at), 300*time.Millisecond, "the output came all at the end")
}

// playJailer plays output through the tap, then answers with res and err.
func playJailer(chunks []string, res *nsjail.Result, err error) *fakeJailer {
	return &fakeJailer{run: func(ctx context.Context, s *nsjail.Spec) (*nsjail.Result, error) {
		tap := nsjail.TapOf(ctx)
		var all []byte
		for _, c := range chunks {
			from := len(all)
			all = append(all, c...)
			if tap != nil {
				tap.Output(0, all, from)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if res != nil {
			res.Stdout = all
		}
		return res, err
	}}
}

// A UTF-8 sequence split between two reads is held back, never sent as
// U+FFFD: the events' text is the program's.
func TestStreamHoldsBackSplitUTF8(t *testing.T) {
	_, _, c := startServer(t, testOptions(), playJailer([]string{"caf\xc3", "\xa9 \xe2\x82", "\xac\n"}, &nsjail.Result{ID: "j-x", Status: nsjail.StatusOK}, nil))
	_, _, events := postStream(t, c, "/v1/run", map[string]any{"code": "pass"})
	var res Result
	stdout, _ := output(t, events, &res)
	assert.Equal(t, "café €\n", stdout)
	assert.Equal(t, "café €\n", res.Stdout)
	for _, e := range events {
		assert.NotContains(t, e.Data, "\uFFFD")
	}
}

// Errors before anything was streamed are ordinary HTTP errors; one
// after is the last event, {"event":"error",...}. Accept:
// application/x-ndjson asks for a stream too.
func TestStreamErrors(t *testing.T) {
	_, _, c := startServer(t, testOptions(), playJailer([]string{"partial\n"}, nil, errors.New("the jail broke")))
	status, ctype, events := postStream(t, c, "/v1/run", map[string]any{"code": "pass", "limits": map[string]any{"memory_bytes": 1}})
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "application/json", ctype)
	require.Len(t, events, 1)
	assert.Contains(t, string(events[0].raw), "limits.memory_bytes")

	status, _, events = postStream(t, c, "/v1/run", map[string]any{"code": "pass"})
	assert.Equal(t, http.StatusOK, status)
	require.Len(t, events, 2)
	assert.Equal(t, "partial\n", events[0].Data)
	last := events[1]
	assert.Equal(t, "error", last.Event, string(last.raw))
	assert.Equal(t, http.StatusInternalServerError, last.Status)
	assert.Equal(t, "setup_failed", last.Error.Code)

	req, err := http.NewRequest(http.MethodPost, "http://agentjail/v1/run", strings.NewReader(`{"code":"pass"}`))
	require.NoError(t, err)
	req.Header.Set("Accept", "application/json, application/x-ndjson")
	resp, err := c.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))
	assert.True(t, strings.HasPrefix(string(b), `{"event":"stdout","data":"partial\n"}`+"\n"), string(b))
}

// Bytes that are not UTF-8 come as U+FFFD in the text, and exactly in
// data_base64 beside it.
func TestStreamInvalidUTF8HasItsBytes(t *testing.T) {
	_, _, c := startServer(t, testOptions(), playJailer([]string{"a\xff\n"}, &nsjail.Result{ID: "j-x", Status: nsjail.StatusOK}, nil))
	_, _, events := postStream(t, c, "/v1/run", map[string]any{"code": "pass"})
	require.Len(t, events, 2)
	assert.Equal(t, "a\uFFFD\n", events[0].Data)
	assert.Contains(t, string(events[0].raw), `"data_base64":"Yf8K"`)
}
