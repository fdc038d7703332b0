package nsjail

import (
	"os"
	"sync"
	"time"
)

// capture collects stdout and stderr up to one shared limit. Past the limit
// it keeps draining (and discarding) so that the jail never blocks on a full
// pipe, and it calls onLimit once so that the caller kills the jail.
type capture struct {
	mu        sync.Mutex
	limit     int64
	total     int64
	buf       [2][]byte
	truncated [2]bool
	limitHit  bool
	onLimit   func()
	// tap, when set, is told of each kept chunk (OutputTap); buf only
	// ever grows by append, so the bytes it is shown never change.
	tap OutputTap

	wg sync.WaitGroup
}

func (c *capture) add(i int, p []byte) {
	c.mu.Lock()
	room := c.limit - c.total
	if int64(len(p)) > room {
		if room > 0 {
			from := len(c.buf[i])
			c.buf[i] = append(c.buf[i], p[:room]...)
			c.total = c.limit
			if c.tap != nil {
				c.tap.Output(i, c.buf[i], from)
			}
		}
		c.truncated[i] = true
		first := !c.limitHit
		c.limitHit = true
		c.mu.Unlock()
		if first {
			c.onLimit()
		}
		return
	}
	from := len(c.buf[i])
	c.buf[i] = append(c.buf[i], p...)
	c.total += int64(len(p))
	if c.tap != nil { // under the lock: the tap sees the chunks in order
		c.tap.Output(i, c.buf[i], from)
	}
	c.mu.Unlock()
}

// readBufs are capture's read buffers. One on a reader's own stack grew
// the goroutine's stack (copied, in the runtime) and cleared 32 KiB, twice
// per run; add copies what it keeps.
const readBufSize = 32 << 10

var readBufs = sync.Pool{New: func() any { return new([readBufSize]byte) }}

// start reads f in the background until EOF.
func (c *capture) start(i int, f *os.File) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		b := readBufs.Get().(*[readBufSize]byte)
		defer readBufs.Put(b)
		for {
			n, err := f.Read(b[:])
			if n > 0 {
				c.add(i, b[:n])
			}
			if err != nil {
				return
			}
		}
	}()
}

// wait waits for both readers. Once the jail's processes are gone every
// write end is closed and EOF comes at once; grace only bounds the odd case
// of a pipe end still in flight in a dead unix socket's queue.
func (c *capture) wait(grace time.Duration, files ...*os.File) {
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-time.After(grace):
	}
	for _, f := range files {
		_ = f.SetReadDeadline(time.Now())
	}
	<-done
}

// MaxReportBytes bounds what the program's report channel (Spec.Report)
// brings back; past it the reader drains and discards.
const MaxReportBytes = 16 << 20
