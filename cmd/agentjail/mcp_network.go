package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"agentjail/daemon"
	"agentjail/daemon/harness"
	"agentjail/egress"
)

// The "network" argument of run_python, run_command and session_start
// (docs/contract.md §8, §9): egress through the daemon's checking proxy,
// by a policy's name or, where the daemon allows it, a list of the
// request's own. The daemon checks it and names what to fix; the text
// answer says what the program reached and what was refused.

// networkSchema is the "network" argument; what is what it holds for
// ("this run", "all calls of the session"). Without a daemon, the schema names
// the configuration's policies; through one, list_environments does.
func networkSchema(cfg *daemon.Config, daemonMode bool, what string) *jsonschema.Schema {
	names := "list_environments lists the daemon's policies and what each allows"
	if !daemonMode {
		if pols := slices.Sorted(maps.Keys(cfg.Network.Policies)); len(pols) > 0 {
			names = "this server's policies: " + strings.Join(pols, ", ") + " (list_environments shows what each allows)"
		} else {
			names = "this server's configuration has none, so no run may have network access"
		}
	}
	return object("Network access for "+what+", through the daemon's HTTP(S) proxy, which checks every connection. Omit it for none: the jail "+
		"has no network at all (the default). Give {\"policy\": \"NAME\"}, where a policy is a named list of host:port the administrator "+
		"allows ("+names+"); or, only where the daemon's configuration allows lists of a request's own (network.inline_allow), "+
		"{\"allow\": [\"pypi.org:443\", \"*.pythonhosted.org:443\"]}. Not both. The program reaches the allowed hosts through the "+
		"HTTP_PROXY and HTTPS_PROXY variables (pip, requests, urllib and curl use them); every other host is refused, and the answer's "+
		"network line lists each refused host with the reason.",
		map[string]*jsonschema.Schema{
			"policy": str("Name of one of the daemon's network policies, e.g. \"pypi\"."),
			"allow": {Type: "array", Items: str("host:port, *.domain:port, IP:port or CIDR:port; the port is required."),
				Description: "Hosts the program may reach, each host:port (e.g. \"pypi.org:443\", \"*.pythonhosted.org:443\"); accepted only where the daemon allows lists of a request's own."},
		})
}

// networkText is the network lines of a run's or a call's answer: the
// counts, then each refused host:port with its reason (""
// for a run without network access).
func networkText(r *egress.Report) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "network: %d allowed, %d blocked (%s sent, %s received)", r.Allowed, r.Blocked,
		harness.Bytes(r.BytesSent), harness.Bytes(r.BytesReceived))
	if r.Truncated {
		b.WriteString(" (more connections than the result lists; the counts are exact)")
	}
	b.WriteString("\n")
	for _, c := range r.Refused() {
		fmt.Fprintf(&b, "  blocked %s: %s (%s)\n", target(c), c.Reason, blockedWhy(c.Reason))
	}
	return b.String()
}

// target is a connection's host:port as the program named it.
func target(c egress.Connection) string {
	host := c.Host
	if host == "" {
		host = c.IP
	}
	if host == "" {
		return "(no request)"
	}
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(c.Port)
}

// blockedWhy says what a refusal's reason means (docs/contract.md §8).
func blockedWhy(reason string) string {
	switch reason {
	case egress.ReasonNotAllowed:
		return "the host or the port is not in the policy"
	case egress.ReasonPrivateAddress:
		return "the address is a private, loopback, link-local or metadata one"
	case egress.ReasonSNIMismatch:
		return "the tunnel did not start with TLS for that host"
	case egress.ReasonHostMismatch:
		return "the Host header names another host than the URL"
	case egress.ReasonBadRequest:
		return "a request the proxy does not take: use http:// URLs or HTTPS through CONNECT"
	case egress.ReasonConnectionLimit:
		return "too many connections in one run"
	}
	return "refused"
}

// networkAsked is the line of session_start's answer that says which
// network access its calls have ("" for none).
func networkAsked(n *daemon.RequestNetwork) string {
	switch {
	case n == nil:
		return ""
	case n.Policy != "":
		return fmt.Sprintf("\nNetwork: policy %s, for all its calls (each call's answer lists what was refused).", n.Policy)
	}
	return fmt.Sprintf("\nNetwork: only %s, for all its calls (each call's answer lists what was refused).", strings.Join(n.Allow, ", "))
}

// policiesText is the network lines of list_environments' answer: each
// policy with what it allows (nil: the daemon did not say).
func policiesText(pols map[string][]string) string {
	if pols == nil {
		return ""
	}
	if len(pols) == 0 {
		return "network policies: none (runs and sessions have no network access)"
	}
	var b strings.Builder
	b.WriteString("network policies (give run_python, run_command or session_start network {\"policy\": NAME}):")
	for _, name := range slices.Sorted(maps.Keys(pols)) {
		allow := "nothing"
		if len(pols[name]) > 0 {
			allow = strings.Join(pols[name], ", ")
		}
		fmt.Fprintf(&b, "\n  %s: allows %s", name, allow)
	}
	return b.String()
}
