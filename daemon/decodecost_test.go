package daemon

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
	"agentjail/nsjail"
)

// attackSize is the size of the bodies TestDecodeCostBounded sends: the
// review's 16 MiB.
const attackSize = 16 << 20

// repeated is prefix, then item repeated with sep between until the body
// is about size bytes, then suffix.
func repeated(prefix, item, sep, suffix string, size int) []byte {
	var b bytes.Buffer
	b.Grow(size + len(item) + len(suffix))
	b.WriteString(prefix)
	for i := 0; b.Len() < size-len(suffix); i++ {
		if i > 0 {
			b.WriteString(sep)
		}
		if strings.Contains(item, "%d") {
			fmt.Fprintf(&b, item, i)
		} else {
			b.WriteString(item)
		}
	}
	b.WriteString(suffix)
	return b.Bytes()
}

// decodeAttacks are bodies of many small elements: each costs the
// decoder far more memory than the bytes that ask for it, unless it
// refuses them before it builds them. want is what the 400 must say.
func decodeAttacks(size int) []struct {
	name, kind, want string
	body             []byte
} {
	const code = `{"code":"def f(): pass",`
	return []struct {
		name, kind, want string
		body             []byte
	}{
		{"cases", "run", "tests.cases: more than 1000 cases", repeated(code+`"tests":{"function":"f","cases":[`, `{}`, ",", `]}}`, size)},
		{"args", "run", "limit on a request's elements", repeated(code+`"tests":{"function":"f","cases":[{"args":[`, `0`, ",", `]}]}}`, size)},
		{"kwargs", "run", "limit on a request's elements", repeated(code+`"tests":{"function":"f","cases":[{"kwargs":{`, `"k%d":0`, ",", `}}]}}`, size)},
		{"env", "run", "env: more than 4096 variables", repeated(code+`"env":{`, `"K%d":""`, ",", `}}`, size)},
		{"files", "run", "files: more than 4080 files", repeated(code+`"files":[`, `{}`, ",", `]}`, size)},
		{"collect", "run", "collect: more than 64 patterns", repeated(code+`"collect":[`, `""`, ",", `]}`, size)},
		{"session env", "session", "env: more than 4096 variables", repeated(`{"env":{`, `"K%d":""`, ",", `}}`, size)},
		{"session files", "session", "files: more than 4080 files", repeated(`{"files":[`, `{}`, ",", `]}`, size)},
		{"call cases", "call", "tests.cases: more than 1000 cases", repeated(code+`"tests":{"function":"f","cases":[`, `{}`, ",", `]}}`, size)},
		{"call args", "call", "limit on a request's elements", repeated(code+`"tests":{"function":"f","cases":[{"name":"a","args":[`, `{}`, ",", `]}]}}`, size)},
	}
}

// decodeKind decodes body as a run request, a session's or a call's.
func decodeKind(kind string, body []byte) error {
	var err error
	switch kind {
	case "run":
		_, err = decodeBody[Request](bytes.NewReader(body), int64(len(body)))
	case "session":
		_, err = decodeBody[SessionRequest](bytes.NewReader(body), int64(len(body)))
	case "call":
		_, err = decodeBody[CallRequest](bytes.NewReader(body), int64(len(body)))
	}
	return err
}

// decodeCost is what decoding body costs this process: the bytes it
// allocated, and its CPU time (the garbage collector's included).
func decodeCost(kind string, body []byte) (alloc uint64, cpu time.Duration, err error) {
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0 := systest.SelfCPU()
	err = decodeKind(kind, body)
	cpu = systest.SelfCPU() - cpu0
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc, cpu, err
}

// TestDecodeCostBounded: a body of many small elements (the review's
// 16 MiB of empty test cases took 1.66 GB and 5 s of CPU before its 400)
// costs the daemon at most a few times its size in memory, and not much
// more CPU than a plain body of the same size (one long code string),
// for a run request, a session's and a call's: the decoder counts
// elements while it checks names, and refuses before it builds values.
// Each refusal names the limit.
func TestDecodeCostBounded(t *testing.T) {
	plain := repeated(`{"code":"`, strings.Repeat("#", 1024), "", `"}`, attackSize)
	_, plainCPU, err := decodeCost("run", plain)
	require.NoError(t, err)
	for _, a := range decodeAttacks(attackSize) {
		t.Run(a.name, func(t *testing.T) {
			alloc, cpu, err := decodeCost(a.kind, a.body)
			t.Logf("%d bytes: %d MiB allocated (%.2f× its size), %v CPU (a plain body's: %v)", len(a.body), alloc>>20, float64(alloc)/float64(len(a.body)), cpu, plainCPU)
			require.Error(t, err)
			assert.Contains(t, err.Error(), a.want)
			assert.LessOrEqual(t, alloc, uint64(3*len(a.body)), "decoding took more than 3× the body's size")
			assert.LessOrEqual(t, cpu, 3*plainCPU+200*time.Millisecond, "decoding took much more CPU than a plain body's")
		})
	}
}

// TestDecodeCostAtTheLimits: a body just within every count limit, of
// the elements that cost the decoder most for their bytes, is decoded
// and made a job (or refused by validation) for at most 3× its size and
// a fixed 32 MiB besides: the sum MaxRequestElements and the other counts
// bound.
func TestDecodeCostAtTheLimits(t *testing.T) {
	const code = `{"code":"def f(**k): pass",`
	n := MaxRequestElements - 16
	for _, a := range []struct {
		name string
		body []byte
	}{
		{"kwargs", repeated(code+`"tests":{"function":"f","cases":[{"kwargs":{`, `"k%d":0`, ",", `}}]}}`, 7*n)},
		{"args", repeated(code+`"tests":{"function":"f","cases":[{"args":[`, `0`, ",", `]}]}}`, 2*n)},
		{"cases", repeated(code+`"tests":{"function":"f","cases":[`, `{"args":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}`, ",", `]}}`, 1000*125)},
		{"env", repeated(code+`"env":{`, `"K%d":""`, ",", `}}`, 4096*8)},
		{"files", repeated(code+`"files":[`, `{"path":"f%d","content":"","encoding":""}`, ",", `]}`, 4080*40)},
	} {
		t.Run(a.name, func(t *testing.T) {
			runtime.GC()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			req, err := decodeRequest(bytes.NewReader(a.body), int64(len(a.body)))
			if err == nil {
				_, err = req.Job(DefaultConfig().Policy())
			}
			runtime.ReadMemStats(&m1)
			alloc := m1.TotalAlloc - m0.TotalAlloc
			t.Logf("%d bytes: %.1f MiB allocated; job: %v", len(a.body), float64(alloc)/(1<<20), err)
			assert.NotContains(t, fmt.Sprint(err), "limit on a request's elements")
			assert.LessOrEqual(t, alloc, uint64(3*len(a.body)+32<<20))
			assert.LessOrEqual(t, alloc, uint64(2*int64(len(a.body))+decodeShare(int64(len(a.body)))), "more than its share of the decoding bound allows for")
		})
	}
}

// TestDecodingChargesElements: a body being decoded takes its bytes of
// the decoding bound and what its elements may cost (decodeShare), so
// that bodies of many small elements decoded at once cannot take tens of
// times the bound. Here the bound has room for the body's bytes but not
// for its elements: the request waits until there is.
func TestDecodingChargesElements(t *testing.T) {
	o := testOptions()
	o.MaxQueuedBytes = o.MaxRequestBytes
	s, _, c := startServer(t, o, &fakeJailer{run: func(ctx context.Context, s *nsjail.Spec) (*nsjail.Result, error) { return okResult(s), nil }})
	body := `{"code":"pass","tests":{"function":"f","cases":[{"args":[1,2,3]}]}}`
	held := s.decoding.size - decodeShare(int64(len(body))) + 1
	require.NoError(t, s.decoding.acquire(context.Background(), held))
	answered := make(chan int, 1)
	go func() {
		resp, err := c.Post("http://agentjail/v1/run", "application/json", strings.NewReader(body))
		if err != nil {
			answered <- -1
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	select {
	case code := <-answered:
		t.Fatalf("decoded (status %d) with %d bytes of the bound left, less than its share %d", code, s.decoding.size-held, decodeShare(int64(len(body))))
	case <-time.After(300 * time.Millisecond):
	}
	s.decoding.release(held)
	select {
	case code := <-answered:
		assert.Equal(t, http.StatusOK, code)
	case <-time.After(10 * time.Second):
		t.Fatal("not decoded once the bound had room")
	}
}
