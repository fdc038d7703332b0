package main

import "context"

// urlBackend is a daemon reached over its remote listener (--url,
// --token-file, --ca; docs/contract.md §7), as `agentjail run --url`
// and the session commands reach it: HTTPS with the bearer token, a
// connection per request. A session lives on the node that made it:
// every call of this server goes to the one --url.
type urlBackend struct{ r remoteURL }

// newURLBackend checks the flags and reads the token before the server
// starts: a usage error is said at once, not at the first call.
func newURLBackend(r remoteURL) (*urlBackend, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	if _, err := r.token(); err != nil {
		return nil, err
	}
	if _, err := r.client(); err != nil {
		return nil, err
	}
	return &urlBackend{r: r}, nil
}

func (b *urlBackend) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	return b.r.do(ctx, method, path, body)
}

func (b *urlBackend) stream(ctx context.Context, path string, body any, out *liveOutput) (int, []byte, error) {
	return b.r.stream(ctx, path, body, out)
}

func (b *urlBackend) where() string { return "the agentjail daemon at " + b.r.url }

func (b *urlBackend) close(context.Context) error { return nil }
