package daemon

import (
	"context"
	"slices"
	"sync"
)

// byteSem bounds the bytes of request bodies being read and decoded at
// once (each takes decodeShare: decoding takes at most three times a
// body's size and what its elements cost): waiters are served in arrival
// order, so a large body is not passed over for ever by small ones. A
// request larger than the whole bound waits for all of it.
type byteSem struct {
	mu      sync.Mutex
	size    int64
	cur     int64
	waiters []*semWaiter
}

type semWaiter struct {
	n     int64
	ready chan struct{}
}

func newByteSem(size int64) *byteSem { return &byteSem{size: size} }

// acquire takes n bytes of the bound, waiting for them unless ctx ends
// first (its error then; nothing is taken).
func (s *byteSem) acquire(ctx context.Context, n int64) error {
	n = min(n, s.size)
	s.mu.Lock()
	if len(s.waiters) == 0 && s.cur+n <= s.size {
		s.cur += n
		s.mu.Unlock()
		return nil
	}
	w := &semWaiter{n: n, ready: make(chan struct{})}
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		select {
		case <-w.ready: // granted meanwhile: given back
			s.cur -= n
		default:
			i := slices.Index(s.waiters, w)
			s.waiters = slices.Delete(s.waiters, i, i+1)
		}
		s.grantLocked() // those behind it may fit now
		s.mu.Unlock()
		return ctx.Err()
	}
}

// release gives back n bytes taken by acquire.
func (s *byteSem) release(n int64) {
	s.mu.Lock()
	s.cur -= min(n, s.size)
	s.grantLocked()
	s.mu.Unlock()
}

func (s *byteSem) grantLocked() {
	for len(s.waiters) > 0 && s.cur+s.waiters[0].n <= s.size {
		w := s.waiters[0]
		s.cur += w.n
		close(w.ready)
		s.waiters = s.waiters[1:]
	}
}
