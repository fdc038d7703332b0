package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

// A tools/call with a progress token gets the output as it comes, in
// progress notifications, well before the answer; one without gets none.
func TestMCPProgress(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	base := 3_200_000_000 + uint32(rand.IntN(1000))*100_000
	d := startDaemon(t, t.TempDir(), fmt.Sprintf("[peers]\nuids = [0]\n[jail]\nuid_base = %d\nuid_count = 100000\n", base))
	type note struct {
		at       time.Time
		msg      string
		progress float64
		token    string
	}
	var mu sync.Mutex
	var notes []note
	cmd, _ := mcpCommand("--socket", d.sock)
	client := mcp.NewClient(&mcp.Implementation{Name: "agentjail-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			notes = append(notes, note{time.Now(), r.Params.Message, r.Params.Progress, fmt.Sprint(r.Params.ProgressToken)})
			mu.Unlock()
		}})
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd, TerminateDuration: 20 * time.Second}, nil)
	require.NoError(t, err)
	defer cs.Close()

	code := "import time\nprint('first', flush=True)\ntime.sleep(1.5)\nprint('second')"
	call := func(name string, args map[string]any, token any) (*mcp.CallToolResult, time.Time) {
		p := &mcp.CallToolParams{Name: name, Arguments: args}
		if token != nil {
			p.SetProgressToken(token)
		}
		res, err := cs.CallTool(context.Background(), p)
		require.NoError(t, err)
		return res, time.Now()
	}
	// of is the notes of token, once the last (the whole output's bytes)
	// came: a notification may reach the handler after the answer.
	of := func(token string, last float64) []note {
		var got []note
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			got = nil
			for _, n := range notes {
				if n.token == token {
					got = append(got, n)
				}
			}
			return len(got) > 0 && got[len(got)-1].progress == last
		}, 5*time.Second, 10*time.Millisecond, "no progress notification of the whole output (%s)", token)
		return got
	}
	res, answered := call("run_python", map[string]any{"code": code}, "tok-1")
	require.False(t, res.IsError)
	got := of("tok-1", float64(len("first\nsecond\n")))
	assert.True(t, strings.HasPrefix(got[0].msg, "first"), "%q", got[0].msg)
	assert.Greater(t, answered.Sub(got[0].at), time.Second, "the first line came only with the answer")

	res, _ = call("run_python", map[string]any{"code": "print(1)"}, nil)
	require.False(t, res.IsError)

	res, _ = call("session_start", nil, nil)
	require.False(t, res.IsError)
	id := res.StructuredContent.(map[string]any)["id"].(string)
	res, answered = call("session_run", map[string]any{"session_id": id, "code": code}, 7)
	require.False(t, res.IsError)
	got = of("7", float64(len("first\nsecond\n")))
	assert.Greater(t, answered.Sub(got[0].at), time.Second, "the first line of the call came only with the answer")
	mu.Lock()
	defer mu.Unlock()
	for _, n := range notes {
		assert.Contains(t, []string{"tok-1", "7"}, n.token, "a notification of a call without a progress token: %+v", n)
	}
}
