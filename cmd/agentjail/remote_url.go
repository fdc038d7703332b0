package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"agentjail/daemon"
)

// remoteURL is a daemon's TCP listener ([remote], docs/contract.md §7):
// `agentjail run --url URL --token-file FILE --ca FILE`.
type remoteURL struct {
	url       string // https://host:port (http:// only for a listener with insecure_plaintext)
	tokenFile string // holds the token; "" takes $AGENTJAIL_TOKEN
	ca        string // PEM certificates to trust; "" the system's
	// serverName is the name the daemon's certificate is checked against,
	// instead of the host of url ("" takes $AGENTJAIL_TLS_SERVER_NAME, else
	// url's host): for a URL of a pod's IP and a certificate that names the
	// Service (agentjail.agentjail.svc), since one certificate per pod IP
	// is impractical.
	serverName string
}

// check says what is wrong with the flags, before anything is sent.
func (r *remoteURL) check() error {
	u, err := url.Parse(r.url)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return usagef("--url %q: want https://HOST:PORT (the daemon's remote.listen or advertise)", r.url)
	}
	if r.ca != "" && u.Scheme != "https" {
		return usagef("--ca: only with an https:// --url")
	}
	if r.tlsServerName() != "" && u.Scheme != "https" {
		return usagef("--tls-server-name (or AGENTJAIL_TLS_SERVER_NAME): only with an https:// --url")
	}
	return nil
}

// tlsServerName is --tls-server-name, else $AGENTJAIL_TLS_SERVER_NAME.
func (r *remoteURL) tlsServerName() string {
	return cmp.Or(r.serverName, os.Getenv("AGENTJAIL_TLS_SERVER_NAME"))
}

// failed is the error of a request that got no answer from the daemon: a
// certificate that does not name the host dialled says how to name
// another.
func (r *remoteURL) failed(err error) error {
	var he x509.HostnameError
	if errors.As(err, &he) {
		if name := r.tlsServerName(); name != "" {
			return fmt.Errorf("daemon at %s: its certificate does not name %q (--tls-server-name): %w", r.url, name, err)
		}
		return fmt.Errorf("daemon at %s: %w; its certificate does not name the host of --url: give --tls-server-name NAME "+
			"(or AGENTJAIL_TLS_SERVER_NAME) with a name it carries, e.g. the Service's, to check it against that", r.url, err)
	}
	return fmt.Errorf("daemon at %s: %w", r.url, err)
}

// token is the bearer token: the content of --token-file, else
// $AGENTJAIL_TOKEN.
func (r *remoteURL) token() (string, error) {
	if r.tokenFile == "" {
		if t := os.Getenv("AGENTJAIL_TOKEN"); t != "" {
			return strings.TrimSpace(t), nil
		}
		return "", usagef("--url: give --token-file FILE (or set AGENTJAIL_TOKEN): the daemon answers remote requests only to a token")
	}
	b, err := os.ReadFile(r.tokenFile)
	if err != nil {
		return "", usagef("--token-file: %v", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" || strings.ContainsAny(t, " \t\n") {
		return "", usagef("--token-file %s: want the token alone, on one line", r.tokenFile)
	}
	return t, nil
}

func (r *remoteURL) client() (*http.Client, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: r.tlsServerName()}
	if r.ca != "" {
		b, err := os.ReadFile(r.ca)
		if err != nil {
			return nil, usagef("--ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, usagef("--ca %s: holds no PEM certificate", r.ca)
		}
		tc.RootCAs = pool
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc, TLSHandshakeTimeout: 10 * time.Second, DisableKeepAlives: true}}, nil
}

// run sends the run request and returns its result, as remoteRun does
// for a socket. Cancelling ctx closes the connection (the daemon ends
// the jail, "cancelled").
func (r *remoteURL) run(ctx context.Context, req *daemon.Request) (*daemon.Result, []byte, error) {
	tok, err := r.token()
	if err != nil {
		return nil, nil, err
	}
	c, err := r.client()
	if err != nil {
		return nil, nil, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(r.url, "/")+"/v1/run", bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Authorization", "Bearer "+tok)
	resp, err := c.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("cancelled: %w", context.Cause(ctx))
		}
		return nil, nil, r.failed(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("daemon at %s: reading the answer: %w", r.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, remoteFailure("", resp.StatusCode, b)
	}
	res, err := daemon.DecodeResult(b)
	if err != nil {
		return nil, nil, fmt.Errorf("daemon at %s: bad result: %w", r.url, err)
	}
	return res, withNode(b, resp.Header.Get("Agentjail-Node")), nil
}

// withNode is the result object b with "node": the node that ran it, as
// its Agentjail-Node header names it (docs/contract.md §7; the Python
// client's Result.node). b is unchanged when the header is missing, or b
// has a "node" of its own.
func withNode(b []byte, node string) []byte {
	var obj map[string]json.RawMessage
	if node == "" || json.Unmarshal(b, &obj) != nil || obj == nil {
		return b
	}
	if _, ok := obj["node"]; ok {
		return b
	}
	name, _ := json.Marshal(node)
	trimmed := bytes.TrimRight(b, " \t\r\n")
	out := append([]byte(nil), trimmed[:len(trimmed)-1]...) // without its closing }
	if len(obj) > 0 {
		out = append(out, ',')
	}
	out = append(append(append(out, `"node":`...), name...), '}')
	return out
}
