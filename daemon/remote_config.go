package daemon

import (
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// RemoteConfig is [remote]: a TCP listener, with TLS and bearer tokens,
// that serves the same API as the Unix socket (docs/contract.md §7). An
// absent [remote] (listen "") means no TCP listener.
type RemoteConfig struct {
	Listen            string `toml:"listen"`             // "host:port" of the TCP listener; "" = off (default)
	TLSCert           string `toml:"tls_cert"`           // PEM certificate (chain); required unless insecure_plaintext; re-read when it changes
	TLSKey            string `toml:"tls_key"`            // PEM private key of tls_cert; re-read when it changes
	ClientCA          string `toml:"client_ca"`          // PEM CA bundle: set, clients must present a certificate it signed (mTLS)
	TokensFile        string `toml:"tokens_file"`        // lines "NAME TOKEN"; several lines = rotation; re-read when it changes
	Node              string `toml:"node"`               // this node's name; default the host name
	Advertise         string `toml:"advertise"`          // host:port clients reach this node at; default $AGENTJAIL_ADVERTISE, else listen
	InsecurePlaintext bool   `toml:"insecure_plaintext"` // true: plain HTTP (behind a mesh that terminates TLS)
}

// nodeNameRe is what a node name may be: it becomes part of session ids
// and of a header, so a DNS label's characters only.
var nodeNameRe = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,61}[A-Za-z0-9])?$`)

// NodeName is this daemon's node: remote.node, else the host name.
func (c *Config) NodeName() string {
	if c.Remote.Node != "" {
		return c.Remote.Node
	}
	h, err := os.Hostname()
	if err != nil || !nodeNameRe.MatchString(h) || strings.Contains(h, "..") {
		return "localhost"
	}
	return h
}

// AdvertiseAddr is how clients reach this node: remote.advertise, else
// $AGENTJAIL_ADVERTISE, else remote.listen.
func (c *Config) AdvertiseAddr() string {
	if c.Remote.Advertise != "" {
		return c.Remote.Advertise
	}
	if a := os.Getenv("AGENTJAIL_ADVERTISE"); a != "" {
		return a
	}
	return c.Remote.Listen
}

// validateRemote checks [remote]; the files it names are read when the
// listener opens (OpenRemote), with errors that name their key.
func (c *Config) validateRemote(bad func(key, format string, a ...any)) {
	r := c.Remote
	if r.Listen == "" {
		if r != (RemoteConfig{}) {
			bad("remote.listen", "is required when [remote] sets other keys: set it to host:port, e.g. \"0.0.0.0:8443\", or remove [remote] for no TCP listener")
		}
		return
	}
	_, port, err := net.SplitHostPort(r.Listen)
	if err != nil {
		bad("remote.listen", "%q is not host:port (write e.g. \"0.0.0.0:8443\")", r.Listen)
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		bad("remote.listen", "port %q of %q is not a number from 1 to 65535", port, r.Listen)
	}
	switch {
	case r.InsecurePlaintext && (r.TLSCert != "" || r.TLSKey != "" || r.ClientCA != ""):
		bad("remote.insecure_plaintext", "is true while remote.tls_cert, tls_key or client_ca is set: choose one (remove insecure_plaintext to serve TLS)")
	case !r.InsecurePlaintext && r.TLSCert == "" && r.TLSKey == "":
		bad("remote.tls_cert", "is required: set remote.tls_cert and remote.tls_key to a PEM certificate and its key, or set remote.insecure_plaintext = true only behind a proxy or mesh that terminates TLS")
	case !r.InsecurePlaintext && (r.TLSCert == "") != (r.TLSKey == ""):
		bad("remote.tls_key", "remote.tls_cert and remote.tls_key go together: set both")
	}
	if r.TokensFile == "" {
		bad("remote.tokens_file", "is required: every remote request but GET /v1/health needs a bearer token; set it to a file of \"NAME TOKEN\" lines")
	}
	if r.Node != "" && (!nodeNameRe.MatchString(r.Node) || strings.Contains(r.Node, "..")) {
		bad("remote.node", "%q is not a node name: letters, digits, '.' and '-', at most 63, starting and ending with a letter or digit", r.Node)
	}
	if r.Advertise != "" {
		if _, _, err := net.SplitHostPort(r.Advertise); err != nil {
			bad("remote.advertise", "%q is not host:port (write e.g. \"node-1.agentjail.svc:8443\")", r.Advertise)
		}
	}
}
