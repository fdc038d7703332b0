package daemon

import (
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"time"

	"agentjail/egress"
)

// NetworkConfig is [network]: egress through the daemon's proxy
// (docs/contract.md §8). With no policy and inline_allow false (the
// default) no request may ask for egress.
type NetworkConfig struct {
	InlineAllow      bool                           `toml:"inline_allow"`       // a request's own "allow" list is accepted only when true; default false
	PrivateAllow     []string                       `toml:"private_allow"`      // IPs and CIDRs the proxy may reach although refused by default (private, loopback, link-local, the host's own); default []
	Resolver         string                         `toml:"resolver"`           // "IP:PORT" of the DNS server the proxy asks; "" = the first nameserver of /etc/resolv.conf (default)
	MaxConnections   int                            `toml:"max_connections"`    // proxy connections per run (per call of a session), at least 1; default 64
	MaxBytes         int64                          `toml:"max_bytes"`          // bytes per run (per call of a session), both directions together, at least 1; default 256 MiB
	ConnectTimeoutMs int64                          `toml:"connect_timeout_ms"` // resolving and connecting to one upstream, at least 1; default 10000
	IdleTimeoutMs    int64                          `toml:"idle_timeout_ms"`    // a connection with no byte either way for this long is closed, at least 1; default 60000
	Policies         map[string]NetworkPolicyConfig `toml:"policies"`           // [network.policies.NAME], named by requests; default none
}

// NetworkPolicyConfig is one [network.policies.NAME].
type NetworkPolicyConfig struct {
	Allow []string `toml:"allow"` // "host:port", "*.domain:port", "IP:port", "CIDR:port" ("[v6]:port"); default []
}

func defaultNetwork() NetworkConfig {
	return NetworkConfig{
		PrivateAllow: []string{}, MaxConnections: 64, MaxBytes: 256 << 20,
		ConnectTimeoutMs: 10000, IdleTimeoutMs: 60000, Policies: map[string]NetworkPolicyConfig{},
	}
}

// policyNameRe is what a policy's name may be.
var policyNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// validateNetwork checks [network].
func (c *Config) validateNetwork(bad func(key, format string, a ...any)) {
	n := c.Network
	if _, err := egress.ParsePrivateAllow(n.PrivateAllow); err != nil {
		bad("network.private_allow", "%v", err)
	}
	if n.Resolver != "" {
		if ap, err := netip.ParseAddrPort(n.Resolver); err != nil || ap.Port() == 0 {
			bad("network.resolver", "%q is not IP:PORT (write e.g. \"10.0.0.2:53\" or \"[2001:db8::53]:53\"), or \"\" for /etc/resolv.conf's first nameserver", n.Resolver)
		}
	}
	if n.MaxConnections < 1 || n.MaxConnections > 100000 {
		bad("network.max_connections", "must be from 1 to 100000, got %d", n.MaxConnections)
	}
	if n.MaxBytes < 1 {
		bad("network.max_bytes", "must be at least 1, got %d", n.MaxBytes)
	}
	for key, v := range map[string]int64{"network.connect_timeout_ms": n.ConnectTimeoutMs, "network.idle_timeout_ms": n.IdleTimeoutMs} {
		if v < 1 || v > maxMs {
			bad(key, "must be from 1 to %d, got %d", maxMs, v)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(n.Policies)) {
		key := "network.policies." + name
		if !policyNameRe.MatchString(name) {
			bad(key, "%q is not a policy name: letters, digits, '_', '.', '-', at most 64, a letter or digit first", name)
			continue
		}
		if _, err := egress.ParsePolicy(n.Policies[name].Allow); err != nil {
			bad(key+".allow", "%v", err)
		}
	}
}

// proxyOptions are the proxy's options from [network].
func (n NetworkConfig) proxyOptions() (egress.Options, error) {
	allow, err := egress.ParsePrivateAllow(n.PrivateAllow)
	if err != nil {
		return egress.Options{}, err
	}
	return egress.Options{
		Guard:          egress.NewGuard(allow),
		Resolver:       n.Resolver,
		MaxConnections: n.MaxConnections,
		MaxBytes:       n.MaxBytes,
		ConnectTimeout: time.Duration(n.ConnectTimeoutMs) * time.Millisecond,
		IdleTimeout:    time.Duration(n.IdleTimeoutMs) * time.Millisecond,
	}, nil
}

// policies parses every [network.policies.NAME] (Validate has checked
// them).
func (n NetworkConfig) policies() (map[string]*egress.Policy, error) {
	out := map[string]*egress.Policy{}
	for name, p := range n.Policies {
		pol, err := egress.ParsePolicy(p.Allow)
		if err != nil {
			return nil, fmt.Errorf("network.policies.%s.allow: %w", name, err)
		}
		out[name] = pol
	}
	return out, nil
}
