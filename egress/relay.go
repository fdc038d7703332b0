package egress

import (
	"errors"
	"io"
	"net"
	"time"
)

var errByteLimit = errors.New("the run's network byte limit is reached")

// spliceChunk is the most one splice moves, and the size asked for its
// pipe.
const spliceChunk = 1 << 20

// meter charges and counts what spliceCopy moves (upReader, upWriter).
type meter interface {
	room() int               // the most the next splice may take; 0: stop
	take(n int) (int, error) // n came in: how many may go on, and an error past the cap
	put(k, n int)            // of the k that were to go on, n went
}

// charge takes up to n bytes from the run's byte budget and returns how
// many it may carry.
func (r *Run) charge(n int) int {
	for {
		used := r.bytes.Load()
		left := r.p.opts.MaxBytes - used
		if left <= 0 {
			return 0
		}
		take := min(int64(n), left)
		if r.bytes.CompareAndSwap(used, used+take) {
			return int(take)
		}
	}
}

// upReader reads from the upstream: every byte is charged to the run and
// counted as received. As a meter it does the same for splice.
type upReader struct {
	r    *Run
	c    *conn
	src  io.Reader
	left int64 // bytes still to carry for splice; -1: until the upstream ends
}

func (u *upReader) Read(p []byte) (int, error) {
	n, err := u.src.Read(p)
	if n > 0 {
		if k, cerr := u.take(n); cerr != nil {
			return k, cerr
		}
	}
	return n, err
}

// take charges n bytes that came from the upstream and counts those the
// cap lets through; past the cap it ends the connection.
func (u *upReader) take(n int) (int, error) {
	u.c.touch()
	if u.left >= 0 {
		u.left -= int64(n)
	}
	k := u.r.charge(n)
	u.c.received.Add(int64(k))
	if k < n {
		u.c.end(ReasonByteLimit)
		return k, errByteLimit
	}
	return n, nil
}

func (u *upReader) room() int    { return u.r.room(u.left) }
func (u *upReader) put(_, _ int) {}

// upWriter writes to the upstream: every byte is charged to the run and
// counted as sent. As a meter it does the same for splice.
type upWriter struct {
	r   *Run
	c   *conn
	dst io.Writer
}

func (u *upWriter) Write(p []byte) (int, error) {
	k, cerr := u.take(len(p))
	n, err := u.dst.Write(p[:k])
	u.put(k, n)
	if err == nil {
		err = cerr
	}
	return n, err
}

// take charges n bytes bound for the upstream and counts as sent those
// the cap lets through, before they go: a report taken once the answer
// is back has them. Past the cap it ends the connection.
func (u *upWriter) take(n int) (int, error) {
	u.c.touch()
	k := u.r.charge(n)
	u.c.sent.Add(int64(k))
	if k < n {
		u.c.end(ReasonByteLimit)
		return k, errByteLimit
	}
	return n, nil
}

func (u *upWriter) room() int { return u.r.room(-1) }

// put corrects the count when fewer than the k bytes taken went.
func (u *upWriter) put(k, n int) { u.c.sent.Add(int64(n - k)) }

// room says how many bytes the next splice may move: at most left when
// left is not negative, and what the byte cap still allows. At the cap
// it is one byte, to learn whether any more come (they end the
// connection with ReasonByteLimit, as a copy would).
func (r *Run) room(left int64) int {
	n := int64(spliceChunk)
	if left >= 0 {
		n = min(n, left)
	}
	if n <= 0 {
		return 0
	}
	return int(min(n, max(r.p.opts.MaxBytes-r.bytes.Load(), 1)))
}

// relay carries bytes both ways between the client and up until both
// directions end, or one fails, and closes both. pending are the
// client's bytes the proxy has read already: they go first.
func (r *Run) relay(rec *conn, pending []byte, up net.Conn) {
	done := make(chan error, 1)
	go func() {
		err := r.download(rec, up, -1)
		if err == nil {
			closeWrite(rec.client)
		} else {
			rec.closeAll() // a reset or a cap: the other way ends too, now
		}
		done <- err
	}()
	if err := r.upload(rec, pending, up); err == nil {
		closeWrite(up)
	} else {
		rec.closeAll()
	}
	<-done
}

// upload carries pending, then what the client sends, to up until the
// client ends, every byte charged to the run and counted (upWriter). It
// splices when both sides are TCP (spliceCopy) and copies otherwise.
func (r *Run) upload(rec *conn, pending []byte, up net.Conn) error {
	w := &upWriter{r: r, c: rec, dst: up}
	if len(pending) > 0 {
		if _, err := w.Write(pending); err != nil {
			return err
		}
	}
	if ok, err := spliceCopy(up, rec.client, w); ok {
		return err
	}
	_, err := io.CopyBuffer(w, rec.client, make([]byte, 64<<10))
	return err
}

// download carries from up to the client until up ends, or limit bytes
// when limit is not negative, every byte charged to the run and counted
// (upReader). It splices when both sides are TCP, through a pipe of its
// own that it closes (spliceCopy; Go's own splice keeps a pool of pipes
// open in the daemon after a run, and a run must leave no descriptor
// behind), and copies otherwise.
func (r *Run) download(rec *conn, up net.Conn, limit int64) error {
	u := &upReader{r: r, c: rec, src: up, left: limit}
	if ok, err := spliceCopy(rec.client, up, u); ok {
		return err
	}
	var from io.Reader = u
	if limit >= 0 {
		from = io.LimitReader(from, limit)
	}
	_, err := io.CopyBuffer(rec.client, from, make([]byte, 64<<10))
	return err
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// watchIdle closes rec when no byte has moved either way for the idle
// timeout. It arms a timer; no goroutine waits meanwhile.
func (r *Run) watchIdle(rec *conn) {
	idle := r.p.opts.IdleTimeout
	var check func()
	check = func() {
		rec.mu.Lock()
		closed := rec.closed
		rec.mu.Unlock()
		if closed {
			return
		}
		since := time.Since(time.Unix(0, rec.last.Load()))
		if since >= idle {
			rec.end(ReasonIdleTimeout)
			rec.closeAll()
			return
		}
		time.AfterFunc(idle-since, check)
	}
	time.AfterFunc(idle, check)
}
