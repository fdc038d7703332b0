package daemon

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/nsjail"
)

// An allow entry with a port and no host (":443") is an error that names
// it: in the configuration, and in a request's inline list (a 400, not a
// dropped connection).
func TestNetworkEntryWithoutHost(t *testing.T) {
	var err error
	require.NotPanics(t, func() {
		var c *Config
		if c, err = parseConfig([]byte("[network.policies.p]\nallow = [\":443\"]\n")); err == nil {
			err = c.Validate()
		}
	})
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), `network.policies.p.allow: allow entry ":443" has no host`)
	}
	j := &fakeJailer{run: func(ctx context.Context, s *nsjail.Spec) (*nsjail.Result, error) { return okResult(s), nil }}
	_, _, c := startServer(t, egressOptions(t, "127.0.0.1:80", true), j)
	resp, err := c.Post("http://agentjail/v1/run", "application/json", strings.NewReader(`{"code":"1","network":{"allow":[":443"]}}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	assert.Equal(t, 400, resp.StatusCode, "%s", b)
	assert.Contains(t, string(b), `allow entry \":443\" has no host`)
}
