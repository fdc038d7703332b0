package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure the daemon's proxy; every run shares them.
type Options struct {
	Guard *Guard
	// Resolver is the DNS server's "IP:PORT"; "" asks the first
	// nameserver of /etc/resolv.conf, read at each lookup.
	Resolver       string
	MaxConnections int   // per run (default 64)
	MaxBytes       int64 // per run, both directions together (default 256 MiB)
	ConnectTimeout time.Duration
	IdleTimeout    time.Duration
	// Observe, when set, is called once for every connection when it
	// ends (metrics).
	Observe func(Connection)
}

// Proxy serves the listeners of runs that have egress.
type Proxy struct {
	opts     Options
	resolver *net.Resolver
}

// New checks opts and returns a proxy.
func New(opts Options) (*Proxy, error) {
	if opts.Guard == nil {
		opts.Guard = NewGuard(nil)
	}
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = 64
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 256 << 20
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 10 * time.Second
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = time.Minute
	}
	if opts.Resolver != "" {
		if _, err := netipAddrPort(opts.Resolver); err != nil {
			return nil, fmt.Errorf("network.resolver %q is not IP:PORT (like \"10.0.0.2:53\")", opts.Resolver)
		}
	}
	return &Proxy{opts: opts, resolver: newResolver(opts.Resolver)}, nil
}

// Run is the proxy of one run (or one session): its listener, its
// policy, its connections and their report.
type Run struct {
	p      *Proxy
	policy *Policy
	l      net.Listener
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	bytes  atomic.Int64 // charged since the last Take

	mu       sync.Mutex
	closed   bool
	live     map[*conn]struct{}
	period   period // since the last Take
	accepted int    // connections accepted since the last Take
	seq      uint64 // connections accepted in all
}

// period gathers what a report will say.
type period struct {
	report Report
	seqs   []uint64 // the accept order of report.Connections
}

// Start serves l for one run with policy and returns the run. The caller
// owns nothing more: Close closes l.
func (p *Proxy) Start(l net.Listener, policy *Policy) *Run {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Run{p: p, policy: policy, l: l, ctx: ctx, cancel: cancel, live: map[*conn]struct{}{}}
	r.wg.Add(1)
	go r.serve()
	return r
}

// Policy returns the run's policy.
func (r *Run) Policy() *Policy { return r.policy }

func (r *Run) serve() {
	defer r.wg.Done()
	for {
		c, err := r.l.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if r.isClosed() || errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(5 * time.Millisecond) // EMFILE and the like
			continue
		}
		r.admit(c)
	}
}

func (r *Run) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// admit starts a handler for c, or refuses it past the connection cap.
func (r *Run) admit(c net.Conn) {
	rec := newConn(c)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		c.Close()
		return
	}
	r.accepted++
	r.seq++
	rec.seq = r.seq
	max := r.p.opts.MaxConnections
	if r.accepted > max || len(r.live) >= max {
		rec.verdict, rec.reason = Blocked, ReasonConnectionLimit
		r.recordLocked(rec)
		r.mu.Unlock()
		_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		writeRefusal(c, 503, fmt.Sprintf("this run reached its limit of %d proxy connections", max))
		c.Close()
		r.observe(rec)
		return
	}
	r.live[rec] = struct{}{}
	r.wg.Add(1)
	r.mu.Unlock()
	go r.handle(rec)
}

// finish ends rec: closes its connections and records it.
func (r *Run) finish(rec *conn) {
	rec.closeAll()
	r.mu.Lock()
	delete(r.live, rec)
	r.recordLocked(rec)
	r.mu.Unlock()
	r.observe(rec)
}

func (r *Run) observe(rec *conn) {
	if r.p.opts.Observe != nil {
		c := rec.snapshot(time.Now())
		c.Sent, c.Received = rec.sent.Load(), rec.received.Load()
		r.p.opts.Observe(c)
	}
}

// recordLocked adds rec's verdict and the bytes not yet reported to the
// current period.
func (r *Run) recordLocked(rec *conn) {
	c := rec.snapshot(time.Now())
	rep := &r.period.report
	if rec.counted && c.Sent == rec.reportedSent && c.Received == rec.reportedReceived && c.Reason == rec.reportedReason {
		return // listed in an earlier period, and nothing new since
	}
	rec.reportedReason = c.Reason
	if !rec.counted {
		rec.counted = true
		if c.Verdict == Blocked {
			rep.Blocked++
		} else {
			rep.Allowed++
		}
	}
	c.Sent -= rec.reportedSent
	c.Received -= rec.reportedReceived
	rec.reportedSent += c.Sent
	rec.reportedReceived += c.Received
	rep.BytesSent += c.Sent
	rep.BytesReceived += c.Received
	if len(rep.Connections) < MaxListed {
		rep.Connections = append(rep.Connections, c)
		r.period.seqs = append(r.period.seqs, rec.seq)
	} else {
		rep.Truncated = true
	}
}

// Take returns the report of the connections since the last Take (a
// session's call) and starts a new period: the connection and byte caps
// start again. A connection still open is listed with its bytes so far,
// and again in the period it ends with the bytes since.
func (r *Run) Take() *Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	for rec := range r.live {
		if rec.decided() {
			r.recordLocked(rec)
		}
	}
	rep := r.period.report
	sort.Sort(byAccept{rep.Connections, r.period.seqs})
	r.period = period{}
	r.accepted = 0
	r.bytes.Store(0)
	if rep.Connections == nil {
		rep.Connections = []Connection{}
	}
	return &rep
}

// Close closes the listener and every connection, waits for every
// goroutine of the run, and returns the report of the last period.
func (r *Run) Close() *Report {
	r.mu.Lock()
	r.closed = true
	for rec := range r.live {
		rec.closeAll()
	}
	r.mu.Unlock()
	r.cancel()
	r.l.Close()
	r.wg.Wait()
	return r.Take()
}

// byAccept sorts a report's connections in the order they came.
type byAccept struct {
	c   []Connection
	seq []uint64
}

func (b byAccept) Len() int           { return len(b.c) }
func (b byAccept) Less(i, j int) bool { return b.seq[i] < b.seq[j] }
func (b byAccept) Swap(i, j int) {
	b.c[i], b.c[j] = b.c[j], b.c[i]
	b.seq[i], b.seq[j] = b.seq[j], b.seq[i]
}
