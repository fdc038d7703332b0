package nsjail

import "context"

// OutputTap is told of a run's output as the capture keeps it, for a
// caller that shows the output live (the daemon's streamed answers).
// stream is 0 for stdout, 1 for stderr; all is everything kept of that
// stream so far, and all[from:] the bytes just read. all is the capture's
// own memory, shared and not copied: its bytes never change (the capture
// only appends), so the tap may keep the slice and read it later, from
// any goroutine, but must never write to it. Output runs on the reader of
// the pipe, in the order the bytes were kept, and must not block: a slow
// tap slows the program's writes. Past the output limit it is called no
// more.
type OutputTap interface {
	Output(stream int, all []byte, from int)
}

type tapKey struct{}

// WithOutputTap returns ctx carrying tap: Runner.Run and Session.Call
// with that context tell tap of the program's stdout and stderr as they
// come. Without one the capture costs what it did.
func WithOutputTap(ctx context.Context, tap OutputTap) context.Context {
	return context.WithValue(ctx, tapKey{}, tap)
}

// TapOf is ctx's tap, or nil (for a Jailer of the daemon's tests that
// plays a program's output).
func TapOf(ctx context.Context) OutputTap {
	t, _ := ctx.Value(tapKey{}).(OutputTap)
	return t
}
