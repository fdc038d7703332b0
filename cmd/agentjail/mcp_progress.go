package main

import (
	"context"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tools/call of run_python or session_run whose request carries a
// progress token (_meta.progressToken) asks the daemon for a stream and
// tells the client of the output as it comes: notifications/progress,
// whose progress is the bytes of output so far and whose message is the
// output since the last one (its last progressMessageBytes). At most one
// every progressEvery: a program that prints fast does not flood the
// client; the whole output is in the tool's answer.

const (
	progressEvery        = 100 * time.Millisecond
	progressMessageBytes = 1 << 10
)

// progress sends a call's progress notifications.
type progress struct {
	ctx     context.Context
	ss      *mcp.ServerSession
	token   any
	n       int64 // output bytes so far
	pending []byte
	last    time.Time
}

// liveProgress is the output's destination for a call that asked for
// progress, or nil.
func liveProgress(ctx context.Context, req *mcp.CallToolRequest) (*liveOutput, *progress) {
	if req == nil || req.Session == nil || req.Params == nil {
		return nil, nil
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil, nil
	}
	p := &progress{ctx: ctx, ss: req.Session, token: token}
	return &liveOutput{stdout: p, stderr: p}, p
}

// Write takes output as it comes (stdout and stderr alike, in order).
func (p *progress) Write(b []byte) (int, error) {
	p.n += int64(len(b))
	p.pending = append(p.pending, b...)
	if len(p.pending) > progressMessageBytes { // keep the latest
		p.pending = append(p.pending[:0], p.pending[len(p.pending)-progressMessageBytes:]...)
	}
	if time.Since(p.last) >= progressEvery {
		p.flush()
	}
	return len(b), nil
}

// flush sends what waits, if anything.
func (p *progress) flush() {
	if p == nil || len(p.pending) == 0 {
		return
	}
	msg := p.pending
	for len(msg) > 0 && !utf8.RuneStart(msg[0]) { // a cut of the latest bytes may start mid-rune
		msg = msg[1:]
	}
	_ = p.ss.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: float64(p.n), Message: string(msg)})
	p.pending = p.pending[:0]
	p.last = time.Now()
}
