package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestByteSem(t *testing.T) {
	s := newByteSem(100)
	ctx := context.Background()
	require.NoError(t, s.acquire(ctx, 60))
	require.NoError(t, s.acquire(ctx, 40))

	waiting := func(n int) { // n waiters in the queue
		require.Eventually(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.waiters) == n }, 5*time.Second, time.Millisecond)
	}
	order := make(chan int64, 3)
	waitFor := func(n int64) {
		go func() {
			if s.acquire(ctx, n) == nil {
				order <- n
			}
		}()
	}
	waitFor(1000) // more than the bound: waits for all of it
	waiting(1)
	waitFor(10) // behind the large one, though it would fit first
	waiting(2)

	// A waiter that gives up takes nothing and holds nobody back.
	gone, cancel := context.WithCancel(ctx)
	errc := make(chan error)
	go func() { errc <- s.acquire(gone, 5) }()
	waiting(3)
	cancel()
	assert.ErrorIs(t, <-errc, context.Canceled)
	waiting(2)

	s.release(60)
	select {
	case n := <-order:
		t.Fatalf("%d granted while 40 of 100 are taken and the large one waits first", n)
	case <-time.After(20 * time.Millisecond):
	}
	s.release(40)
	assert.Equal(t, int64(1000), <-order, "the first waiter first")
	s.release(1000)
	assert.Equal(t, int64(10), <-order)
	s.release(10)
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Zero(t, s.cur)
	assert.Empty(t, s.waiters)
}
