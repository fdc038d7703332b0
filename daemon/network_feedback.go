package daemon

import (
	"fmt"

	"agentjail/egress"
)

// limitFeedback says which of the run's limits cut an allowed connection
// short, once per limit: the program saw only a closed connection (a
// body cut short, with no error).
func limitFeedback(rep *egress.Report) []string {
	if rep == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, c := range rep.Connections {
		if c.Verdict != egress.Allowed || seen[c.Reason] {
			continue
		}
		seen[c.Reason] = true
		target := egress.Target{Host: c.Host, Port: c.Port}.HostPort()
		switch c.Reason {
		case egress.ReasonByteLimit:
			out = append(out, fmt.Sprintf("The proxy cut the connection to %s at this run's network byte limit (network.max_bytes, both directions together): what it received may be cut short with no error. Fetch less, or ask the operator for a larger limit.", target))
		case egress.ReasonIdleTimeout:
			out = append(out, fmt.Sprintf("The proxy closed the connection to %s after no byte moved for network.idle_timeout_ms: a response may be cut short.", target))
		}
	}
	return out
}
