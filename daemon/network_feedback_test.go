package daemon

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"agentjail/egress"
)

// A connection cut by a limit gets a sentence: the program itself saw
// only a quietly truncated body.
func TestNetworkFeedbackNamesLimits(t *testing.T) {
	pol, err := egress.ParsePolicy([]string{"pypi.org:443"})
	assert.NoError(t, err)
	rep := &egress.Report{Connections: []egress.Connection{
		{Host: "pypi.org", Port: 443, Verdict: egress.Allowed, Reason: egress.ReasonByteLimit},
		{Host: "pypi.org", Port: 443, Verdict: egress.Allowed, Reason: egress.ReasonByteLimit},
		{Host: "pypi.org", Port: 443, Verdict: egress.Allowed, Reason: egress.ReasonIdleTimeout},
		{Verdict: egress.Blocked, Reason: egress.ReasonConnectionLimit},
		{Host: "pypi.org", Port: 443, Verdict: egress.Allowed},
	}}
	fb := networkFeedback(rep, pol)
	if assert.Len(t, fb, 3, "%q", fb) {
		assert.Contains(t, fb[0], "network.max_connections")
		assert.Contains(t, fb[1], "pypi.org:443 at this run's network byte limit (network.max_bytes")
		assert.Contains(t, fb[2], "network.idle_timeout_ms")
	}
	assert.Empty(t, networkFeedback(nil, pol))
}
