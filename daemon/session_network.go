package daemon

import (
	"agentjail/nsjail"
)

// network checks a session request's "network" and, when it asks for
// egress, gives its jail the proxy's variables and the hook that opens
// the listener at its start. The listener lives as long as the session;
// each call's result reports that call's connections.
func (q *SessionRequest) network(p Policy, spec *nsjail.Spec) (*netRun, error) {
	if q.Network == nil {
		return nil, nil
	}
	pol, err := p.Network.policyFor(q.Network)
	if err != nil {
		return nil, err
	}
	nr := p.Network.newRun(pol)
	spec.Env = withProxyEnv(spec.Env)
	spec.Network = nr.hook
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return nr, nil
}

// report puts a call's connections, and the feedback on what the proxy
// refused, in its result. A session without egress has "network": null.
func (n *netRun) report(res *Result) {
	if n == nil {
		return
	}
	res.Network = n.take()
	res.Feedback = append(res.Feedback, networkFeedback(res.Network, n.pol)...)
}
