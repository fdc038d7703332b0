package egress

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// conn is one client connection and, once dialled, its upstream.
type conn struct {
	client   net.Conn
	start    time.Time
	seq      uint64       // accept order in the run
	sent     atomic.Int64 // program -> upstream
	received atomic.Int64 // upstream -> program
	last     atomic.Int64 // time of the last byte either way, unix ns

	mu      sync.Mutex
	target  Target
	ip      string
	verdict string
	reason  string
	up      net.Conn
	closed  bool

	// Guarded by Run.mu.
	counted                        bool
	reportedSent, reportedReceived int64
	reportedReason                 string
}

func newConn(c net.Conn) *conn {
	rec := &conn{client: c, start: time.Now()}
	rec.touch()
	return rec
}

func (c *conn) touch() { c.last.Store(time.Now().UnixNano()) }

func (c *conn) setTarget(t Target) {
	c.mu.Lock()
	c.target = t
	c.mu.Unlock()
}

func (c *conn) setIP(ip string) {
	c.mu.Lock()
	c.ip = ip
	c.mu.Unlock()
}

// decide sets the verdict; a later block (an SNI that does not match
// after the connect) overrides an allow.
func (c *conn) decide(verdict, reason string) {
	c.mu.Lock()
	c.verdict, c.reason = verdict, reason
	c.mu.Unlock()
}

// end records what ended an allowed connection; the first reason wins.
func (c *conn) end(reason string) {
	c.mu.Lock()
	if c.reason == "" {
		c.reason = reason
	}
	c.mu.Unlock()
}

func (c *conn) decided() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.verdict != ""
}

// setUpstream keeps up so that closeAll closes it; it says false (and
// closes up) when the connection is already closed.
func (c *conn) setUpstream(up net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		up.Close()
		return false
	}
	c.up = up
	return true
}

// closeAll closes both sides; every blocked read or write returns.
func (c *conn) closeAll() {
	c.mu.Lock()
	c.closed = true
	up := c.up
	c.mu.Unlock()
	c.client.Close()
	if up != nil {
		up.Close()
	}
}

func (c *conn) snapshot(now time.Time) Connection {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.verdict == "" {
		// It ended before it sent a whole request.
		c.verdict, c.reason = Blocked, ReasonBadRequest
	}
	return Connection{
		Host: c.target.Host, Port: c.target.Port, IP: c.ip,
		Verdict: c.verdict, Reason: c.reason,
		Sent: c.sent.Load(), Received: c.received.Load(),
		MS: float64(now.Sub(c.start).Microseconds()) / 1000,
	}
}
