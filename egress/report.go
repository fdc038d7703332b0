package egress

import "strconv"

// Verdicts.
const (
	Allowed = "allowed"
	Blocked = "blocked"
)

// Reasons. A blocked connection says why it was refused; an allowed one
// says what ended or failed it, or "" when it ended normally.
const (
	ReasonNotAllowed      = "not_allowed"      // the name or port is not in the policy
	ReasonPrivateAddress  = "private_address"  // the address is refused (guard.go)
	ReasonSNIMismatch     = "sni_mismatch"     // the ClientHello names another host
	ReasonHostMismatch    = "host_mismatch"    // the Host header names another host
	ReasonBadRequest      = "bad_request"      // origin-form, malformed, unsupported method
	ReasonConnectionLimit = "connection_limit" // past max_connections
	ReasonResolveFailed   = "resolve_failed"
	ReasonConnectFailed   = "connect_failed"
	ReasonByteLimit       = "byte_limit"
	ReasonIdleTimeout     = "idle_timeout"
)

// Reasons lists every reason by verdict, for metrics and docs.
var Reasons = map[string][]string{
	Blocked: {ReasonNotAllowed, ReasonPrivateAddress, ReasonSNIMismatch, ReasonHostMismatch, ReasonBadRequest, ReasonConnectionLimit},
	Allowed: {"", ReasonResolveFailed, ReasonConnectFailed, ReasonByteLimit, ReasonIdleTimeout},
}

// MaxListed is the most connections one Report lists; its counts are
// exact whatever the list holds.
const MaxListed = 200

// Connection is one client connection to the proxy.
type Connection struct {
	Host     string  `json:"host"` // as the client named it; "" when it sent no request
	Port     int     `json:"port"`
	IP       string  `json:"ip"` // the address connected (or refused); "" when none
	Verdict  string  `json:"verdict"`
	Reason   string  `json:"reason"`
	Sent     int64   `json:"sent"`     // bytes from the program to the upstream
	Received int64   `json:"received"` // bytes from the upstream to the program
	MS       float64 `json:"ms"`       // from accept to close (or to the report)
}

// Report is what a run (or a session's call) did on the network.
type Report struct {
	Allowed       int          `json:"allowed"`
	Blocked       int          `json:"blocked"`
	BytesSent     int64        `json:"bytes_sent"`
	BytesReceived int64        `json:"bytes_received"`
	Connections   []Connection `json:"connections"`
	Truncated     bool         `json:"truncated"`
}

// Refused returns the distinct host:port targets the report lists as
// blocked, in order, for feedback.
func (r *Report) Refused() []Connection {
	if r == nil {
		return nil
	}
	var out []Connection
	seen := map[string]bool{}
	for _, c := range r.Connections {
		k := c.Host + "\x00" + strconv.Itoa(c.Port) + "\x00" + c.Reason
		if c.Verdict != Blocked || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, c)
	}
	return out
}
