package daemon

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"agentjail/egress"
	"agentjail/nsjail"
)

// Egress is the daemon's network egress (docs/contract.md §8): the proxy
// every run with a "network" shares, and the policies a request may name.
type Egress struct {
	proxy    *egress.Proxy
	policies map[string]*egress.Policy
	inline   bool
	// observer counts each connection when it ends (the server's
	// metrics); nil until a server sets it.
	observer atomic.Pointer[func(egress.Connection)]
}

// RequestNetwork is a run's or a session's "network": a policy of the
// configuration by name, or (where network.inline_allow is true) a list
// of its own.
type RequestNetwork struct {
	Policy string   `json:"policy,omitempty"`
	Allow  []string `json:"allow,omitempty"`
}

// NewEgress builds the egress of [network]; Validate has checked it.
func NewEgress(n NetworkConfig) (*Egress, error) {
	pols, err := n.policies()
	if err != nil {
		return nil, err
	}
	opts, err := n.proxyOptions()
	if err != nil {
		return nil, err
	}
	e := &Egress{policies: pols, inline: n.InlineAllow}
	opts.Observe = e.observe
	if e.proxy, err = egress.New(opts); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *Egress) observe(c egress.Connection) {
	if f := e.observer.Load(); f != nil {
		(*f)(c)
	}
}

// Policies lists each policy's allow list, by name (GET /v1/environments).
func (e *Egress) Policies() map[string][]string {
	out := map[string][]string{}
	if e == nil {
		return out
	}
	for name, p := range e.policies {
		out[name] = p.Entries()
	}
	return out
}

// validForm is what the errors about "network" show.
const validForm = `"network": {"policy": "NAME"}` + ` or, where the daemon allows it, ` + `"network": {"allow": ["pypi.org:443"]}`

// policyFor is the policy a request's "network" asks for; every error is
// a *nsjail.FieldError that says what to write instead.
func (e *Egress) policyFor(n *RequestNetwork) (*egress.Policy, error) {
	names := "none (the daemon's configuration has no [network.policies.NAME])"
	if e != nil && len(e.policies) > 0 {
		names = strings.Join(slices.Sorted(maps.Keys(e.policies)), ", ")
	}
	switch {
	case n.Policy != "" && n.Allow != nil:
		return nil, &nsjail.FieldError{Field: "network", Msg: "give policy or allow, not both: " + validForm}
	case n.Policy != "":
		if e != nil {
			if p, ok := e.policies[n.Policy]; ok {
				return p, nil
			}
		}
		return nil, &nsjail.FieldError{Field: "network.policy", Msg: fmt.Sprintf("unknown policy %q; this daemon has: %s", n.Policy, names)}
	case n.Allow != nil:
		if e == nil || !e.inline {
			return nil, &nsjail.FieldError{Field: "network.allow", Msg: "this daemon takes no allow list of a request's own (network.inline_allow is false): name a policy instead; it has: " + names}
		}
		p, err := egress.ParsePolicy(n.Allow)
		if err != nil {
			return nil, &nsjail.FieldError{Field: "network.allow", Msg: err.Error()}
		}
		return p, nil
	}
	return nil, &nsjail.FieldError{Field: "network", Msg: "is empty: write " + validForm}
}

// proxyEnv are the variables a run with egress gets: every common client
// finds the proxy, and none is told to go around it.
var proxyEnv = map[string]string{
	"HTTP_PROXY": "http://" + egress.ListenAddr, "HTTPS_PROXY": "http://" + egress.ListenAddr,
	"http_proxy": "http://" + egress.ListenAddr, "https_proxy": "http://" + egress.ListenAddr,
	"NO_PROXY": "", "no_proxy": "",
}

// withProxyEnv is env (the request's own) with proxyEnv over it.
func withProxyEnv(env map[string]string) map[string]string {
	out := maps.Clone(env)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, proxyEnv)
	return out
}

// networkFeedback says which hosts the policy refused and what it
// allows, for a repair loop; nothing when nothing was refused.
func networkFeedback(rep *egress.Report, p *egress.Policy) []string {
	var out []string
	refused := rep.Refused()
	for i, c := range refused {
		if i == 3 {
			out = append(out, fmt.Sprintf("The proxy refused %d more connections; the result's network object lists them.", len(refused)-3))
			break
		}
		out = append(out, refusalSentence(c, p))
	}
	return out
}

func refusalSentence(c egress.Connection, p *egress.Policy) string {
	target := egress.Target{Host: c.Host, Port: c.Port}.HostPort()
	allowed := strings.Join(p.Entries(), ", ")
	if allowed == "" {
		allowed = "nothing"
	}
	switch c.Reason {
	case egress.ReasonNotAllowed:
		return fmt.Sprintf("The network policy refused %s: it allows only %s.", target, allowed)
	case egress.ReasonPrivateAddress:
		return fmt.Sprintf("The proxy refused %s: it resolves to %s, a private, loopback, link-local or this host's own address, which no run may reach unless the operator lists it in network.private_allow.", target, c.IP)
	case egress.ReasonSNIMismatch:
		return fmt.Sprintf("The proxy closed the tunnel to %s: the TLS server name must be the CONNECT host.", target)
	case egress.ReasonHostMismatch:
		return fmt.Sprintf("The proxy refused a request for %s whose Host header names another host.", target)
	case egress.ReasonConnectionLimit:
		return "The proxy refused connections past this run's limit (network.max_connections); reuse connections or open fewer."
	}
	return "The proxy refused a request it could not read as CONNECT host:port or an absolute-form http:// request; use the HTTP_PROXY and HTTPS_PROXY variables the run has."
}
