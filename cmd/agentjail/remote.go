package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"

	"agentjail/daemon"
	"agentjail/nsjail"
)

// remoteError is the daemon's refusal (docs/contract.md §2): exit 125.
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
// result, with the exact bytes of its output and file names
// (daemon.DecodeResult), and the answer as it came (what --json prints).
// Cancelling ctx closes the connection, which makes the daemon end the
// jail ("cancelled").
//
// The daemon is whatever listens on --socket (AGENTJAIL_SOCKET): it gets
// the code and the --file contents read with the caller's rights, and its
// verdicts are believed. The socket's path must be one that only the
// daemon's user can create (the default /run/agentjail is root's), and
// the process that listens must be root's or the caller's own (its
// SO_PEERCRED, checked before anything is sent): a daemon runs as root.
//
// With live, the run's output is asked as a stream and written to live
// as it comes (remoteStream).
func remoteRun(ctx context.Context, sock string, req *daemon.Request, live *liveOutput) (*daemon.Result, []byte, error) {
	var status int
	var b []byte
	var err error
	if live != nil {
		req.Stream = true
		status, b, err = remoteStream(ctx, sock, "/v1/run", req, live)
	} else {
		status, b, err = remoteDo(ctx, sock, http.MethodPost, "/v1/run", req)
	}
	if err != nil {
		return nil, nil, err
	}
	if status != http.StatusOK {
		return nil, nil, remoteFailure("", status, b)
	}
	res, err := daemon.DecodeResult(b)
	if err != nil {
		return nil, nil, fmt.Errorf("daemon on %s: bad result: %w", sock, err)
	}
	return res, b, nil
}

// remoteDo sends one request to the daemon on sock, with body as its JSON
// (nil: none), and returns the answer's status and body, checking first
// who listens (trustedServer). Cancelling ctx closes the connection.
func remoteDo(ctx context.Context, sock, method, path string, body any) (int, []byte, error) {
	resp, err := remoteSend(ctx, sock, method, path, body)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("daemon on %s: reading the answer: %w", sock, err)
	}
	return resp.StatusCode, b, nil
}

// remoteSend is remoteDo up to the answer's header: the caller reads
// the body and closes it.
func remoteSend(ctx context.Context, sock, method, path string, body any) (*http.Response, error) {
	c := trustedClient(sock)
	c.Transport.(*http.Transport).DisableKeepAlives = true
	hr, err := jsonRequest(ctx, method, "http://agentjail"+path, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("cancelled: %w", context.Cause(ctx))
		}
		var de *daemonAbsent
		if errors.As(err, &de) {
			return nil, de
		}
		return nil, fmt.Errorf("daemon on %s: %w", sock, err)
	}
	return resp, nil
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

// daemonAbsent is a socket that no daemon answers on: said as the Python
// client says it, with what to do.
type daemonAbsent struct{ msg string }

func (e *daemonAbsent) Error() string { return e.msg }

// dialError says why the connection to sock failed, and what to do.
func dialError(sock string, err error) error {
	switch {
	case errors.Is(err, syscall.ENOENT):
		return &daemonAbsent{fmt.Sprintf("no agentjail daemon socket at %s: is `agentjail serve` running? Start it, or point --socket (or AGENTJAIL_SOCKET) at its socket", sock)}
	case errors.Is(err, syscall.ECONNREFUSED) && !isSocket(sock):
		return &daemonAbsent{fmt.Sprintf("%s is not a Unix socket: point --socket (or AGENTJAIL_SOCKET) at the agentjail daemon's socket", sock)}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &daemonAbsent{fmt.Sprintf("the agentjail daemon refused the connection at %s (a stale socket: the daemon is not running; start `agentjail serve`)", sock)}
	case errors.Is(err, syscall.EACCES):
		return &daemonAbsent{fmt.Sprintf("permission denied connecting to %s: this user may not use the daemon's socket (the configuration's socket.group and peers decide who may)", sock)}
	case errors.Is(err, syscall.ENOTSOCK), errors.Is(err, syscall.ENOTDIR):
		return &daemonAbsent{fmt.Sprintf("%s is not a Unix socket: point --socket (or AGENTJAIL_SOCKET) at the agentjail daemon's socket", sock)}
	}
	return err
}

// isSocket tells whether path is a socket (connect(2) refuses a file that
// is none as it refuses a socket nobody listens on).
func isSocket(path string) bool {
	st, err := os.Stat(path)
	return err != nil || st.Mode()&os.ModeSocket != 0
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

// trustedClient is an HTTP client of the daemon on sock that checks, at
// each connection, who listens there (trustedServer).
func trustedClient(sock string) *http.Client {
	c := daemon.HTTPClient(sock)
	tr := c.Transport.(*http.Transport)
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, dialError(sock, err)
		}
		if err := trustedServer(conn); err != nil {
			conn.Close()
			return nil, err
		}
		return conn, nil
	}
	return c
}

// jsonRequest is a request to url (a daemon's API), with body as its JSON
// (nil: none). Cancelling ctx closes its connection.
func jsonRequest(ctx context.Context, method, url string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	hr, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	return hr, nil
}
