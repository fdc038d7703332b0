package daemon

import (
	"context"
	"errors"
	"sync"
	"time"
)

var (
	errQueueFull  = errors.New("queue full")
	errQueueBytes = errors.New("queued bytes at their maximum") // in a *queueBytesError
	errDraining   = errors.New("shutting down")
)

// admission bounds the jails running at once and the requests waiting for
// a slot. Waiters are served in arrival order (blocked channel senders are
// queued by the runtime).
type admission struct {
	slots    chan struct{} // one token per running jail
	queueLen int
	maxBytes int64         // request bytes the waiting requests may hold together; 0 = no bound
	closed   chan struct{} // closed when the daemon stops: waiters give up

	mu          sync.Mutex
	queued      int
	queuedBytes int64
	avg         time.Duration // moving average of run durations, for Retry-After
}

// queueBytesError refuses a request because the requests waiting hold
// waiting bytes, and size more would pass the bound: the figures of the
// decision.
type queueBytesError struct{ waiting, size int64 }

func (e *queueBytesError) Error() string { return errQueueBytes.Error() }
func (e *queueBytesError) Unwrap() error { return errQueueBytes }

func newAdmission(maxConcurrent, queueLen int, maxQueuedBytes int64) *admission {
	return &admission{slots: make(chan struct{}, maxConcurrent), queueLen: queueLen, maxBytes: maxQueuedBytes, closed: make(chan struct{})}
}

// acquire waits for a slot for a request of size bytes (what the daemon
// holds of it while it waits): errQueueFull or errQueueBytes at once when
// the queue has no room, errDraining when the daemon stops, ctx's error
// when the client leaves.
func (a *admission) acquire(ctx context.Context, size int64) error {
	select {
	case <-a.closed:
		return errDraining
	default:
	}
	select {
	case a.slots <- struct{}{}:
		return nil
	default:
	}
	a.mu.Lock()
	if err := a.refusedLocked(size); err != nil {
		a.mu.Unlock()
		return err
	}
	a.queued++
	a.queuedBytes += size
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.queued--
		a.queuedBytes -= size
		a.mu.Unlock()
	}()
	select {
	case a.slots <- struct{}{}:
		return nil
	case <-a.closed:
		return errDraining
	case <-ctx.Done():
		return ctx.Err()
	}
}

// release frees a slot; took is how long the run held it.
func (a *admission) release(took time.Duration) {
	<-a.slots
	a.mu.Lock()
	if a.avg == 0 {
		a.avg = took
	} else {
		a.avg = (a.avg*7 + took) / 8
	}
	a.mu.Unlock()
}

func (a *admission) close() { close(a.closed) }

// refused is what acquire would answer now, without waiting, for a
// request of size bytes: errQueueFull, a *queueBytesError, or nil.
func (a *admission) refused(size int64) error {
	if len(a.slots) < cap(a.slots) {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.refusedLocked(size)
}

func (a *admission) refusedLocked(size int64) error {
	if a.queued >= a.queueLen {
		return errQueueFull
	}
	if a.maxBytes > 0 && a.queuedBytes+size > a.maxBytes {
		return &queueBytesError{waiting: a.queuedBytes, size: size}
	}
	return nil
}

func (a *admission) running() int { return len(a.slots) }

func (a *admission) waitingBytes() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.queuedBytes
}

func (a *admission) waiting() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.queued
}

// retryAfter estimates when a slot frees up for a rejected request: the
// queue's runs spread over the slots, at least one second.
func (a *admission) retryAfter() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	est := time.Duration(a.queued+1) * a.avg / time.Duration(cap(a.slots))
	secs := int((est + time.Second - 1) / time.Second)
	return max(secs, 1)
}
