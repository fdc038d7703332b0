package egress

import (
	"errors"
	"io"
	"net"
	"time"
)

var errByteLimit = errors.New("the run's network byte limit is reached")

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
// counted as received.
type upReader struct {
	r   *Run
	c   *conn
	src io.Reader
}

func (u *upReader) Read(p []byte) (int, error) {
	n, err := u.src.Read(p)
	if n > 0 {
		u.c.touch()
		k := u.r.charge(n)
		u.c.received.Add(int64(k))
		if k < n {
			u.c.end(ReasonByteLimit)
			return k, errByteLimit
		}
	}
	return n, err
}

// upWriter writes to the upstream: every byte is charged to the run and
// counted as sent.
type upWriter struct {
	r   *Run
	c   *conn
	dst io.Writer
}

func (u *upWriter) Write(p []byte) (int, error) {
	u.c.touch()
	k := u.r.charge(len(p))
	n, err := u.dst.Write(p[:k])
	u.c.sent.Add(int64(n))
	if err == nil && k < len(p) {
		u.c.end(ReasonByteLimit)
		err = errByteLimit
	}
	return n, err
}

// relay copies both ways between the client (reading from clientR) and
// up until both directions end, or one fails, and closes both.
func (r *Run) relay(rec *conn, clientR io.Reader, up net.Conn) {
	done := make(chan error, 1)
	go func() {
		err := r.download(rec, up)
		if err == nil {
			closeWrite(rec.client)
		} else {
			rec.closeAll() // a reset or a cap: the other way ends too, now
		}
		done <- err
	}()
	_, err := io.CopyBuffer(&upWriter{r: r, c: rec, dst: up}, clientR, make([]byte, 64<<10))
	if err == nil {
		closeWrite(up)
	} else {
		rec.closeAll()
	}
	<-done
}

// spliceChunk is how many bytes a download moves in the kernel between
// two looks at the byte cap.
const spliceChunk = 256 << 10

// download copies from up to the client until up ends. Between two TCP
// sockets the kernel moves the bytes (splice, through io.LimitedReader),
// spliceChunk at a time taken from the run's budget and the unused part
// given back; otherwise through upReader.
func (r *Run) download(rec *conn, up net.Conn) error {
	dst, ok1 := rec.client.(*net.TCPConn)
	src, ok2 := up.(*net.TCPConn)
	if !ok1 || !ok2 {
		_, err := io.CopyBuffer(rec.client, &upReader{r: r, c: rec, src: up}, make([]byte, 64<<10))
		return err
	}
	for {
		take := r.charge(spliceChunk)
		if take == 0 {
			rec.end(ReasonByteLimit)
			return errByteLimit
		}
		n, err := dst.ReadFrom(io.LimitReader(src, int64(take)))
		r.bytes.Add(n - int64(take))
		rec.received.Add(n)
		if n > 0 {
			rec.touch()
		}
		if err != nil || n < int64(take) { // an error, or up's end
			return err
		}
	}
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
	seen := rec.kernelBytes()
	var check func()
	check = func() {
		rec.mu.Lock()
		closed := rec.closed
		rec.mu.Unlock()
		if closed {
			return
		}
		if k := rec.kernelBytes(); k != seen { // bytes came in a chunk still being spliced
			seen = k
			rec.touch()
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
