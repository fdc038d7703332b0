package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"agentjail/daemon"
	"agentjail/nsjail"
)

// remoteError is the daemon's refusal (CONTRACT.md §2): exit 125.
type remoteError struct {
	Status  int
	Code    string
	Message string
}

func (e *remoteError) Error() string {
	return fmt.Sprintf("daemon refused the run (%d %s): %s", e.Status, e.Code, e.Message)
}

// remoteRun sends the request to the daemon on sock and returns its
// result. Cancelling ctx closes the connection, which makes the daemon end
// the jail ("cancelled").
//
// The daemon is whatever listens on --socket (AGENTJAIL_SOCKET): it gets
// the code and the --file contents read with the caller's rights, and its
// verdicts are believed. The socket's path must be one that only the
// daemon's user can create (the default /run/agentjail is root's), and
// the process that listens must be root's or the caller's own (its
// SO_PEERCRED, checked before anything is sent): a daemon runs as root.
func remoteRun(ctx context.Context, sock string, req *daemon.Request) (*daemon.Result, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	c := daemon.HTTPClient(sock)
	tr := c.Transport.(*http.Transport)
	tr.DisableKeepAlives = true
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if err := trustedServer(conn); err != nil {
			conn.Close()
			return nil, err
		}
		return conn, nil
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://agentjail/v1/run", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("cancelled: %w", context.Cause(ctx))
		}
		return nil, fmt.Errorf("daemon on %s: %w", sock, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("daemon on %s: reading the answer: %w", sock, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error.Code == "" {
			return nil, &remoteError{Status: resp.StatusCode, Code: "http_error", Message: string(bytes.TrimSpace(b))}
		}
		re := &remoteError{Status: resp.StatusCode, Code: e.Error.Code, Message: e.Error.Message}
		if re.Code == "invalid_request" { // named as the flag that set the field
			field, msg, _ := strings.Cut(re.Message, ": ")
			return nil, flagError(&nsjail.FieldError{Field: field, Msg: msg})
		}
		return nil, re
	}
	var res daemon.Result
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("daemon on %s: bad result: %w", sock, err)
	}
	return &res, nil
}

// trustedServer checks who listens on a Unix connection: root, or the
// caller's own user.
func trustedServer(conn net.Conn) error {
	cred, err := daemon.PeerCred(conn)
	if err != nil {
		return fmt.Errorf("who listens: %w", err)
	}
	if !daemon.TrustedOwner(cred.Uid) {
		return fmt.Errorf("the server runs as uid %d (pid %d), neither root nor you: nothing sent; point --socket (AGENTJAIL_SOCKET) at the agentjail daemon's socket", cred.Uid, cred.Pid)
	}
	return nil
}
