package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// The session commands over a daemon's remote listener (`agentjail
// session ... --url URL --token-file FILE --ca FILE`, docs/contract.md §7).
// A session lives on the node that made it: give the same --url (the
// session's endpoint) to every command of one session.

// send is remoteSend for the remote listener: the answer up to its
// header; the caller reads the body and closes it.
func (r *remoteURL) send(ctx context.Context, method, path string, body any) (*http.Response, error) {
	tok, err := r.token()
	if err != nil {
		return nil, err
	}
	c, err := r.client()
	if err != nil {
		return nil, err
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	hr, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(r.url, "/")+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	hr.Header.Set("Authorization", "Bearer "+tok)
	resp, err := c.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("cancelled: %w", context.Cause(ctx))
		}
		return nil, r.failed(err)
	}
	return resp, nil
}

// do is remoteDo for the remote listener.
func (r *remoteURL) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	resp, err := r.send(ctx, method, path, body)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("daemon at %s: reading the answer: %w", r.url, err)
	}
	return resp.StatusCode, b, nil
}

// stream is remoteStream for the remote listener.
func (r *remoteURL) stream(ctx context.Context, path string, body any, out *liveOutput) (int, []byte, error) {
	resp, err := r.send(ctx, http.MethodPost, path, body)
	if err != nil {
		return 0, nil, err
	}
	return readStream(ctx, resp, "daemon at "+r.url, out)
}

// sessionDo sends a session command's request to the remote listener
// when --url (or AGENTJAIL_URL) is given, else to the socket.
func sessionDo(ctx context.Context, ra *runArgs, method, path string, body any) (int, []byte, error) {
	if ra.remote.url != "" {
		return ra.remote.do(ctx, method, path, body)
	}
	return remoteDo(ctx, ra.socket, method, path, body)
}

// sessionStream is sessionDo for a call whose output is streamed.
func sessionStream(ctx context.Context, ra *runArgs, path string, body any, out *liveOutput) (int, []byte, error) {
	if ra.remote.url != "" {
		return ra.remote.stream(ctx, path, body, out)
	}
	return remoteStream(ctx, ra.socket, path, body, out)
}
