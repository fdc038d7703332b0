//go:build linux

package harness

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A call whose code catches agentjail's interrupt and goes on says so in
// its end record ("caught"), for the daemon's feedback; one that dies of
// it, or that no interrupt reached, does not.
func TestSessionSaysTheCodeCaughtItsInterrupt(t *testing.T) {
	h := startSessionHost(t)
	interrupted := func(code string) *hostCall {
		done := make(chan *hostCall)
		go func() { done <- h.call(code, nil, nil, "") }()
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, h.cmd.Process.Signal(syscall.SIGINT))
		select {
		case c := <-done:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("the call did not end")
			return nil
		}
	}
	c := interrupted("import time\ntry:\n    time.sleep(30)\nexcept KeyboardInterrupt:\n    pass\n'went on'")
	assert.Equal(t, int32(0), c.status)
	assert.Equal(t, "'went on'", value(c))
	assert.True(t, c.end.Caught, string(c.raw))

	c = interrupted("try:\n    time.sleep(30)\nexcept BaseException:\n    raise ValueError('then this')")
	assert.Equal(t, int32(1<<8), c.status)
	assert.True(t, c.end.Caught, string(c.raw))

	c = interrupted("time.sleep(30)")
	assert.Equal(t, int32(syscall.SIGINT), c.status)
	assert.False(t, c.end.Caught, "it died of the interrupt: %s", c.raw)
	c = h.call("def broken(:\n    pass", nil, nil, "")
	assert.False(t, c.end.Caught, "no interrupt reached this call: %s", c.raw)
}
