package daemon

import (
	"context"
	"errors"
	"sync"
	"time"
)

var (
	errQueueFull = errors.New("queue full")
	errDraining  = errors.New("shutting down")
)

// admission bounds the jails running at once and the requests waiting for
// a slot. Waiters are served in arrival order (blocked channel senders are
// queued by the runtime).
type admission struct {
	slots    chan struct{} // one token per running jail
	queueLen int
	closed   chan struct{} // closed when the daemon stops: waiters give up

	mu     sync.Mutex
	queued int
	avg    time.Duration // moving average of run durations, for Retry-After
}

func newAdmission(maxConcurrent, queueLen int) *admission {
	return &admission{slots: make(chan struct{}, maxConcurrent), queueLen: queueLen, closed: make(chan struct{})}
}

// acquire waits for a slot: errQueueFull at once when the queue is full,
// errDraining when the daemon stops, ctx's error when the client leaves.
func (a *admission) acquire(ctx context.Context) error {
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
	if a.queued >= a.queueLen {
		a.mu.Unlock()
		return errQueueFull
	}
	a.queued++
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.queued--
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

// full says that a request arriving now would get errQueueFull.
func (a *admission) full() bool {
	if len(a.slots) < cap(a.slots) {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.queued >= a.queueLen
}

func (a *admission) running() int { return len(a.slots) }

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
