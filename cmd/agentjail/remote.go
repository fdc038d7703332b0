package main

import (
	"bytes"
	"cmp"
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
	What    string // what was refused: "" for the run
	Status  int
	Code    string
	Message string
}

func (e *remoteError) Error() string {
	return fmt.Sprintf("daemon refused the %s (%d %s): %s", cmp.Or(e.What, "run"), e.Status, e.Code, e.Message)
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
	status, b, err := remoteDo(ctx, sock, http.MethodPost, "/v1/run", req)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, remoteFailure("", status, b)
	}
	var res daemon.Result
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("daemon on %s: bad result: %w", sock, err)
	}
	return &res, nil
}

// remoteDo sends one request to the daemon on sock, with body as its JSON
// (nil: none), and returns the answer's status and body, checking first
// who listens (trustedServer). Cancelling ctx closes the connection.
func remoteDo(ctx context.Context, sock, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
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
	hr, err := http.NewRequestWithContext(ctx, method, "http://agentjail"+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, fmt.Errorf("cancelled: %w", context.Cause(ctx))
		}
		return 0, nil, fmt.Errorf("daemon on %s: %w", sock, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("daemon on %s: reading the answer: %w", sock, err)
	}
	return resp.StatusCode, b, nil
}

// remoteFailure is the daemon's error answer to a request for what (""
// for a run): a usage error naming the flag behind an invalid field, else
// a *remoteError.
func remoteFailure(what string, status int, b []byte) error {
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if json.Unmarshal(b, &e) != nil || e.Error.Code == "" {
		return &remoteError{What: what, Status: status, Code: "http_error", Message: string(bytes.TrimSpace(b))}
	}
	re := &remoteError{What: what, Status: status, Code: e.Error.Code, Message: e.Error.Message}
	if re.Code == "invalid_request" { // named as the flag that set the field
		field, msg, _ := strings.Cut(re.Message, ": ")
		return flagError(&nsjail.FieldError{Field: field, Msg: msg})
	}
	return re
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
