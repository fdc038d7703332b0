package daemon

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// The remote listener (docs/contract.md §7): the API of the Unix socket on
// TCP, with TLS, where a bearer token of remote.tokens_file stands for
// the peer uid.

// DefaultRemoteConns is how many remote connections are open at once, at
// most; more wait in the kernel's backlog.
const DefaultRemoteConns = 512

// remoteMaxHeaderBytes bounds a remote request's header.
const remoteMaxHeaderBytes = 64 << 10

// RemoteOptions configure ServeRemote.
type RemoteOptions struct {
	TLS      *tls.Config // nil: plain HTTP (remote.insecure_plaintext)
	Tokens   *TokenStore
	MaxConns int // connections at once; 0: DefaultRemoteConns
}

// OpenRemote opens the listener of [remote] (nil when it is off): its
// tokens, its certificate, its port. Every failure names its key.
func OpenRemote(c *Config, log *slog.Logger) (net.Listener, *RemoteOptions, error) {
	rc := c.Remote
	if rc.Listen == "" {
		return nil, nil, nil
	}
	tokens, err := OpenTokens(rc.TokensFile, log)
	if err != nil {
		return nil, nil, err
	}
	ro := &RemoteOptions{Tokens: tokens}
	if rc.InsecurePlaintext {
		log.Warn("REMOTE LISTENER WITHOUT TLS (remote.insecure_plaintext = true): tokens and code cross the network in clear; use it only behind a proxy or mesh that terminates TLS", "listen", rc.Listen)
	} else {
		ro.TLS, err = remoteTLS(rc, func(err error) {
			log.Error("remote.tls_cert/remote.tls_key changed but do not load; the last good certificate stays", "err", err)
		})
		if err != nil {
			return nil, nil, err
		}
	}
	l, err := net.Listen("tcp", rc.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("remote.listen: %w", err)
	}
	return l, ro, nil
}

// ServeRemote answers the API on l, each request but GET /v1/health
// authenticated by its bearer token before anything of it is read
// further, until the server shuts down (http.ErrServerClosed).
func (s *Server) ServeRemote(l net.Listener, ro RemoteOptions) error {
	if ro.Tokens == nil {
		return errors.New("remote listener without tokens")
	}
	hs := &http.Server{
		Handler:           s.nodeHeaders(s.checkToken(ro.Tokens, s.mux)),
		ReadHeaderTimeout: s.hs.ReadHeaderTimeout, // also bounds the TLS handshake
		IdleTimeout:       s.hs.IdleTimeout,
		MaxHeaderBytes:    remoteMaxHeaderBytes,
		ErrorLog:          log.New(&handshakeErrors{next: s.hs.ErrorLog.Writer()}, "", 0),
	}
	l = newLimitListener(l, cmpOrInt(ro.MaxConns, DefaultRemoteConns))
	if ro.TLS != nil {
		l = tls.NewListener(l, ro.TLS)
	}
	done := make(chan struct{})
	s.hs.RegisterOnShutdown(func() {
		// Handlers end within Shutdown's grace (their jails are killed
		// then); idle and half-open connections close now.
		_ = hs.Shutdown(context.Background())
		close(done)
	})
	err := hs.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		<-done
	}
	return err
}

func cmpOrInt(a, b int) int {
	if a > 0 {
		return a
	}
	return b
}

type principalKey struct{}

// principalOf is who a request comes from, the owner of what it makes:
// "token:NAME" on the remote listener, "uid:N" (the peer uid) on the
// socket, "" when neither is known (owns nothing).
func principalOf(r *http.Request) string {
	if p, ok := r.Context().Value(principalKey{}).(string); ok {
		return p
	}
	if c := peerOf(r); c != nil {
		return "uid:" + strconv.FormatUint(uint64(c.Uid), 10)
	}
	return ""
}

// bearerToken is the token of the request's Authorization header, "" if
// none.
func bearerToken(r *http.Request) string {
	a := r.Header.Get("Authorization")
	if len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}

// checkToken lets through GET /v1/health and requests with a valid token
// (as their NAME's); every other gets the same 401, whether its token is
// missing or wrong, before its body is read, and its connection closes
// (nothing of the body is read to keep it).
func (s *Server) checkToken(tokens *TokenStore, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/health" {
			next.ServeHTTP(w, r)
			return
		}
		name, ok := tokens.Check(bearerToken(r))
		if !ok {
			if s.refusals.Add(1)%100 == 1 {
				s.log.Warn("remote request without a valid token", "remote_addr", r.RemoteAddr, "path", r.URL.Path, "refused_so_far", s.refusals.Load())
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentjail"`)
			w.Header().Set("Connection", "close")
			s.fail(w, r, http.StatusUnauthorized, "unauthorized", "a valid \"Authorization: Bearer TOKEN\" header is required (a token of the daemon's remote.tokens_file)")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, "token:"+name)))
	})
}

// nodeHeaders sets Agentjail-Node on every answer, and
// Agentjail-Free-Slots (counted when the answer's header is written) on
// those of runs and sessions.
func (s *Server) nodeHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Agentjail-Node", s.opts.Node)
		if r.URL.Path == "/v1/run" || strings.HasPrefix(r.URL.Path, "/v1/sessions") {
			w = &slotsWriter{ResponseWriter: w, s: s}
		}
		next.ServeHTTP(w, r)
	})
}

// slotsWriter sets Agentjail-Free-Slots as the header is written.
type slotsWriter struct {
	http.ResponseWriter
	s     *Server
	wrote bool
}

func (w *slotsWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		w.Header().Set("Agentjail-Free-Slots", strconv.Itoa(w.s.freeSlots()))
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *slotsWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's deadlines.
func (w *slotsWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// freeSlots is how many runs would start now without waiting.
func (s *Server) freeSlots() int {
	if s.draining.Load() {
		return 0
	}
	return max(0, s.opts.MaxConcurrent-s.adm.running()-s.adm.waiting())
}

// handleCapacity is GET /v1/capacity: this node's load, for a client
// that spreads runs over nodes.
func (s *Server) handleCapacity(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.fail(w, r, http.StatusMethodNotAllowed, "method_not_allowed", "use GET /v1/capacity")
		return
	}
	s.sess.mu.Lock()
	n := len(s.sess.live)
	s.sess.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"node": s.opts.Node, "slots": s.opts.MaxConcurrent, "running": s.adm.running(), "queued": s.adm.waiting(),
		"sessions": n, "max_sessions": s.opts.MaxSessions, "draining": s.draining.Load(),
	})
}

// limitListener accepts at most n connections at once: the next Accept
// waits until one closes (the kernel's backlog holds the rest).
type limitListener struct {
	net.Listener
	sem chan struct{}
}

func newLimitListener(l net.Listener, n int) net.Listener {
	return &limitListener{Listener: l, sem: make(chan struct{}, n)}
}

func (l *limitListener) Accept() (net.Conn, error) {
	l.sem <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: sync.OnceFunc(func() { <-l.sem })}, nil
}

type limitConn struct {
	net.Conn
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

// handshakeErrors passes net/http's error log on, but of the failed TLS
// handshakes (anyone who reaches the port can make them) only the first
// and every 1000th: a flood of them does not flood the log.
type handshakeErrors struct {
	next io.Writer
	n    atomic.Int64
}

func (h *handshakeErrors) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("TLS handshake error")) {
		if n := h.n.Add(1); n%1000 != 1 {
			return len(p), nil
		}
	}
	return h.next.Write(p)
}
