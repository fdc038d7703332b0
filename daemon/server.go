package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"agentjail/daemon/internal/jsontext"
	"agentjail/nsjail"
)

// Options configure a Server: plain data, built from the configuration
// file by `agentjail serve` (Config) or directly by tests.
type Options struct {
	Policy          Policy
	AllowUIDs       []uint32 // peers (SO_PEERCRED) with one of these uids are answered
	AllowGIDs       []uint32 // ... or with one of these gids
	MaxConcurrent   int      // jails running at once; at least 1
	QueueLength     int      // requests waiting for a slot before 429
	MaxRequestBytes int64    // request body cap (413 above it)
	MaxQueuedBytes  int64    // request bytes the waiting requests hold together (429 above it); 0 = no bound
	Version         string   // reported by /v1/health
	Node, Advertise string   // this node's name (Agentjail-Node; default the host name) and address (remote.go)
	CgroupVersion   string   // "v1" or "v2", reported by /v1/health
	Logger          *slog.Logger
	// PreparedReady, when set, tells how many prepared jails wait now
	// (nsjail.Runner.PreparedStats), for the metrics.
	PreparedReady func() int
	// Warm, when set, tells of the zygotes (nsjail.Runner.WarmStats): how
	// many are up, how many runs wait forked ahead, how many zygotes were
	// started after the first, how many warm requests ran cold.
	Warm func() (up, ahead int, restarts, fallbacks int64)
	// WarmUp, when set, tells whether environment name's zygote is up
	// (GET /v1/environments).
	WarmUp func(name string) bool
	// Sessions (sessions.go; the jailer must keep them, as
	// nsjail.Runner does): how many may be alive (0: none), their idle
	// timeout and its maximum, their lifetime. Zero durations take the
	// configuration's defaults.
	MaxSessions                               int
	SessionIdleTimeout, SessionMaxIdleTimeout time.Duration
	SessionMaxLifetime                        time.Duration
	// bodyTimeout bounds the reading of a request's body, which holds its
	// size of the bytes that may be decoded at once; answerTimeout bounds
	// the writing of a result to a client that does not read it, which
	// holds the result's memory and keeps Shutdown waiting. Neither can be
	// http.Server's ReadTimeout or WriteTimeout, which would count the
	// run. Always 30 s and 1 min, but in tests.
	bodyTimeout, answerTimeout time.Duration
	// streamStall bounds one write of a streamed answer (stream.go);
	// defaultStreamStall, but in tests.
	streamStall time.Duration
	// sessionMemory is how long an ended session is remembered (410,
	// then 404): rememberEnded, but in tests.
	sessionMemory time.Duration
}

// Server is the HTTP API of docs/contract.md §2 on a Unix socket, shaped like
// net/http: Serve(listener), then Shutdown(ctx).
type Server struct {
	opts   Options
	jailer Jailer
	log    *slog.Logger
	adm    *admission
	m      *metrics
	sess   *sessions
	hs     *http.Server
	mux    *http.ServeMux // the API, behind checkPeer here and checkToken on the remote listener

	decoding *byteSem // bodies being read and decoded: max_queued_bytes together
	draining atomic.Bool
	// drainAsked: Drain was called (remote_drain.go); stopping: Shutdown was.
	drainAsked, stopping atomic.Bool
	refusals             atomic.Int64
	// killAll ends every running jail with nsjail.KillShutdown when the
	// grace period of Shutdown is over.
	killCtx context.Context
	killAll context.CancelFunc
	// jobs counts handlers between admission and their answer. jobsMu
	// makes a handler's look at draining and its jobs.Add one step
	// against Shutdown's setting of draining: no Add may come from zero
	// once Shutdown waits (sync.WaitGroup panics on that).
	jobsMu sync.Mutex
	jobs   sync.WaitGroup
}

// NewServer returns a server that runs jails with jailer.
func NewServer(o Options, jailer Jailer) *Server {
	if o.MaxConcurrent < 1 {
		o.MaxConcurrent = 1
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = DefaultConfig().Admission.MaxRequestBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.bodyTimeout <= 0 {
		o.bodyTimeout = 30 * time.Second
	}
	if o.answerTimeout <= 0 {
		o.answerTimeout = time.Minute
	}
	o.sessionMemory = cmp.Or(o.sessionMemory, rememberEnded)
	o.streamStall = cmp.Or(o.streamStall, defaultStreamStall)
	def := DefaultConfig().Sessions
	o.SessionIdleTimeout = cmp.Or(o.SessionIdleTimeout, time.Duration(def.IdleTimeout))
	o.SessionMaxIdleTimeout = max(cmp.Or(o.SessionMaxIdleTimeout, time.Duration(def.MaxIdleTimeout)), o.SessionIdleTimeout)
	o.SessionMaxLifetime = cmp.Or(o.SessionMaxLifetime, time.Duration(def.MaxLifetime))
	o.Node = cmp.Or(o.Node, (&Config{}).NodeName())
	s := &Server{opts: o, jailer: jailer, log: o.Logger}
	s.adm = newAdmission(o.MaxConcurrent, o.QueueLength, o.MaxQueuedBytes)
	budget := o.MaxQueuedBytes
	if budget <= 0 { // no bound on the queue's bytes: as many bodies of the largest size as there are CPUs
		budget = int64(max(2, o.MaxConcurrent)) * o.MaxRequestBytes
	}
	s.decoding = newByteSem(max(budget, o.MaxRequestBytes))
	s.m = newMetrics(s.adm, o.PreparedReady, o.Warm)
	s.m.countEgress(o.Policy.Network)
	s.sess = newSessions(s)
	s.killCtx, s.killAll = context.WithCancel(context.Background())
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/run", s.handleRun)
	mux.HandleFunc("/v1/health", s.handleHealth)
	mux.HandleFunc("/v1/environments", s.handleEnvironments)
	mux.HandleFunc("/v1/sessions", s.handleSessions)
	mux.Handle("/v1/sessions/", s.sessionHere(http.HandlerFunc(s.handleSession)))
	mux.HandleFunc("/v1/capacity", s.handleCapacity)
	mux.Handle("/metrics", s.m.handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, "not_found", fmt.Sprintf("no endpoint %s %s (see docs/contract.md §2: POST /v1/run, GET /v1/health, GET /v1/environments, /v1/sessions, GET /metrics)", r.Method, r.URL.Path))
	})
	s.mux = mux
	s.hs = &http.Server{
		Handler:           s.nodeHeaders(s.checkPeer(s.drainRoute(mux))),
		ConnContext:       withPeer,
		ReadHeaderTimeout: 10 * time.Second,
		// An idle connection holds a daemon fd: a client that keeps none
		// busy for a minute reconnects.
		IdleTimeout: time.Minute,
		ErrorLog:    slog.NewLogLogger(o.Logger.Handler(), slog.LevelWarn),
	}
	return s
}

// Serve answers requests on l until Shutdown; it then returns
// http.ErrServerClosed.
func (s *Server) Serve(l net.Listener) error { return s.hs.Serve(l) }

// Shutdown stops the server: it stops accepting, answers queued requests
// with 503, ends idle sessions, lets running jails (and sessions' calls)
// finish until ctx is done, then kills them with kill_reason "shutdown",
// answers their requests, ends every session ("shutdown") and returns once
// every jail is gone (its cgroup removed).
func (s *Server) Shutdown(ctx context.Context) error {
	s.jobsMu.Lock()
	already := s.stopping.Swap(true)
	s.draining.Store(true)
	s.jobsMu.Unlock()
	if already {
		return errors.New("already shutting down")
	}
	s.adm.close()
	s.sess.shutdown() // idle sessions end now, those in a call with it
	done := make(chan error, 1)
	go func() { done <- s.hs.Shutdown(context.Background()) }()
	jobsDone := make(chan struct{})
	go func() { s.jobs.Wait(); close(jobsDone) }()
	select {
	case <-jobsDone:
	case <-ctx.Done():
		s.log.Warn("grace period over: killing running jails", "running", s.adm.running())
		s.killAll()
		<-jobsDone
	}
	s.sess.closeAll()
	// Every handler has answered; the connections close as they go idle.
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		return s.hs.Close()
	}
}

// Running and Queued are the admission state (for health and tests).
func (s *Server) Running() int { return s.adm.running() }
func (s *Server) Queued() int  { return s.adm.waiting() }

type peerKey struct{}

// withPeer records the peer's credentials (SO_PEERCRED: taken by the
// kernel at connect, not claimed by the client) in the connection's context.
func withPeer(ctx context.Context, c net.Conn) context.Context {
	cred, err := PeerCred(c)
	if err != nil {
		return ctx
	}
	return context.WithValue(ctx, peerKey{}, cred)
}

func peerOf(r *http.Request) *unix.Ucred {
	c, _ := r.Context().Value(peerKey{}).(*unix.Ucred)
	return c
}

// checkPeer answers only peers whose uid or gid the configuration allows.
func (s *Server) checkPeer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := peerOf(r)
		if c == nil || !(slices.Contains(s.opts.AllowUIDs, c.Uid) || slices.Contains(s.opts.AllowGIDs, c.Gid)) {
			attrs := []any{"path", r.URL.Path}
			if c != nil {
				attrs = append(attrs, "peer_pid", c.Pid, "peer_uid", c.Uid, "peer_gid", c.Gid)
			}
			if s.refusals.Add(1)%100 == 1 { // the first, then every 100th: a refused peer cannot flood the log
				s.log.Warn("peer refused", append(attrs, "refused_so_far", s.refusals.Load())...)
			}
			w.Header().Set("Connection", "close")
			s.fail(w, r, http.StatusForbidden, "forbidden", "this peer's uid and gid are not allowed (see [peers] in the configuration)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.fail(w, r, http.StatusMethodNotAllowed, "method_not_allowed", "use GET /v1/health")
		return
	}
	status, code := "ok", http.StatusOK
	if s.draining.Load() { // the engine takes the node out of its endpoints
		status, code = "draining", http.StatusServiceUnavailable
	}
	body := map[string]any{
		"status": status, "version": s.opts.Version, "cgroup": s.opts.CgroupVersion,
		"running": s.adm.running(), "queued": s.adm.waiting(),
	}
	if code != http.StatusOK {
		body["error"] = map[string]string{"code": "draining", "message": "this node is draining: it takes no new work"}
	}
	writeJSON(w, code, body)
}

// EnvironmentInfo is one environment in GET /v1/environments.
type EnvironmentInfo struct {
	Name           string   `json:"name"`
	Python         string   `json:"python"`
	PythonVersion  string   `json:"python_version"`
	ReadOnlyMounts []string `json:"read_only_mounts"`
	Preload        []string `json:"preload"`
	Packages       []string `json:"packages"`   // top-level modules beyond the standard library
	Warm           bool     `json:"warm"`       // its zygote is up: a warm request forks it now
	FontCache      string   `json:"font_cache"` // matplotlib's font cache: FontCacheNone, FontCacheBuilding or FontCacheBuilt
}

// handleEnvironments is GET /v1/environments: the environments a request
// may name, sorted by name.
func (s *Server) handleEnvironments(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.fail(w, r, http.StatusMethodNotAllowed, "method_not_allowed", "use GET /v1/environments")
		return
	}
	envs := s.opts.Policy.Environments
	if envs == nil {
		envs = map[string]*Environment{DefaultEnvironment: {Name: DefaultEnvironment}}
	}
	list := []EnvironmentInfo{}
	for _, name := range slices.Sorted(maps.Keys(envs)) {
		e := envs[name]
		info := EnvironmentInfo{Name: name, Python: cmp.Or(e.Python, nsjail.DefaultPython), PythonVersion: e.PythonVersion,
			ReadOnlyMounts: nonNil(e.ReadOnlyMounts), Preload: nonNil(e.Preload), Packages: nonNil(e.Packages),
			FontCache: cmp.Or(e.FontCacheState(), FontCacheNone)}
		if s.opts.WarmUp != nil {
			info.Warm = s.opts.WarmUp(name)
		}
		list = append(list, info)
	}
	writeJSON(w, http.StatusOK, map[string]any{"environments": list, "default_start": cmp.Or(string(s.opts.Policy.Start), string(nsjail.StartCold)),
		"network_policies": s.opts.Policy.Network.Policies()})
}

// nonNil is s, or an empty list (JSON [] rather than null).
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// handleRun is POST /v1/run, in its steps: admit the request, decode its
// body, validate it into a job, queue for a slot, run the jail, log the
// run, answer with the result. Each step answers the client itself when
// the request goes no further.
func (s *Server) handleRun(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w, r) {
		return
	}
	req, size, ok := s.decode(w, r)
	if !ok {
		return
	}
	job, ok := s.validate(w, r, req)
	if !ok {
		return
	}
	w, st := s.streamAnswer(w, r, req.Stream) // stream.go
	defer st.close()
	if !s.track(w, r) {
		return
	}
	defer s.jobs.Done()
	var res *Result
	var jr *nsjail.Result
	var err, cause error
	queued, ok := s.withSlot(w, r, size, func(ctx context.Context) {
		res, jr, err = job.Run(st.bind(ctx), s.jailer)
		cause = context.Cause(ctx)
	})
	if !ok {
		return
	}
	if res == nil {
		s.notRun(w, r, cause, err)
		return
	}
	if err != nil {
		s.log.Warn("jail clean-up failed; the start-up sweep of the next instance removes what is left", "id", res.ID, "err", err)
	}
	s.logRun(r, res, jr, queued)
	// Written even when the client looks gone: net/http cannot tell a
	// client that closed from one that only shut down its writing side
	// (nc -N), which still reads. To a closed one the write fails at once.
	s.writeResult(w, r, res)
}

// admit refuses, before its body is read, a request that cannot be taken:
// the wrong method, a daemon shutting down, a body declared too large, a
// full queue.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		s.fail(w, r, http.StatusMethodNotAllowed, "method_not_allowed", "use POST /v1/run with a JSON run request")
		return false
	}
	return s.admitBody(w, r)
}

// admitBody is admit after the method: what any request with a body that
// will wait for a slot must pass.
func (s *Server) admitBody(w http.ResponseWriter, r *http.Request) bool {
	if s.draining.Load() {
		s.shuttingDown(w, r)
		return false
	}
	// A body declared too large is refused unread, and before a full
	// queue is: 413 is final, while 429 would have the client retry what
	// can never be taken. One that grows past the limit while it is read
	// (chunked, or lying) is cut by MaxBytesReader.
	if r.ContentLength > s.opts.MaxRequestBytes {
		s.tooLarge(w, r)
		return false
	}
	// Refused before the body is read: a full queue costs no decoding,
	// nor does a body declared larger than the queue's byte bound allows.
	if err := s.adm.refused(max(r.ContentLength, 0)); err != nil {
		s.queueFull(w, r, err)
		return false
	}
	return true
}

// decode reads the body and decodes the request strictly; size is the
// bytes it read.
func (s *Server) decode(w http.ResponseWriter, r *http.Request) (req *Request, size int64, ok bool) {
	return decodeFor[Request](s, w, r)
}

// decodeFor is decode for a body of type T; a failure is answered.
func decodeFor[T any](s *Server, w http.ResponseWriter, r *http.Request) (req *T, size int64, ok bool) {
	// Decoding takes at most three times a body's size, and what its
	// elements cost (decodeShare): the bodies being decoded hold at most
	// max_queued_bytes of shares together (one of no declared size counts
	// as the largest). A body that does not come in time gives its share
	// back.
	declared := r.ContentLength
	if declared < 0 {
		declared = s.opts.MaxRequestBytes
	}
	share := decodeShare(declared)
	if s.decoding.acquire(r.Context(), share) != nil {
		panic(http.ErrAbortHandler) // gone: nobody to answer
	}
	// net/http clears the deadline when, the body read, it reads on to
	// see the client leave.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.opts.bodyTimeout))
	body := &countingReader{r: http.MaxBytesReader(w, r.Body, s.opts.MaxRequestBytes)}
	req, err := decodeBody[T](body, r.ContentLength)
	s.decoding.release(share)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		s.tooLarge(w, r)
		return nil, 0, false
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		s.fail(w, r, http.StatusBadRequest, "invalid_request", fmt.Sprintf("the request body did not arrive within %v (%d bytes of it came): send the whole body at once, with a Content-Length that matches it", s.opts.bodyTimeout, body.n))
		return nil, 0, false
	case err != nil:
		s.fail(w, r, http.StatusBadRequest, "invalid_request", err.Error())
		return nil, 0, false
	}
	return req, body.n, true
}

// validate checks the request against the policy and makes it a job.
func (s *Server) validate(w http.ResponseWriter, r *http.Request, req *Request) (*Job, bool) {
	job, err := req.Job(s.opts.Policy)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "invalid_request", err.Error())
		return nil, false
	}
	return job, true
}

// track counts the request among those Shutdown waits for (the caller
// calls s.jobs.Done when it has answered), unless the daemon is shutting
// down.
func (s *Server) track(w http.ResponseWriter, r *http.Request) bool {
	s.jobsMu.Lock()
	defer s.jobsMu.Unlock()
	if s.draining.Load() {
		s.shuttingDown(w, r)
		return false
	}
	s.jobs.Add(1)
	return true
}

// queue waits for a slot to run the job in; size is what the request
// holds of the daemon's memory meanwhile.
func (s *Server) queue(w http.ResponseWriter, r *http.Request, size int64) bool {
	switch err := s.adm.acquire(r.Context(), size); {
	case errors.Is(err, errQueueFull), errors.Is(err, errQueueBytes):
		s.queueFull(w, r, err)
		return false
	case errors.Is(err, errDraining):
		s.shuttingDown(w, r)
		return false
	case err != nil: // the client went away while queued: nobody to answer
		s.m.rejected.WithLabelValues("cancelled").Inc()
		panic(http.ErrAbortHandler) // no empty 200 to a half-closed client
	}
	return true
}

// withSlot waits for a run slot for a request of size bytes (answering
// 429 or 503 itself: ok false) and runs f holding it; queued is how long
// it waited. f's jail ends when the client goes away (the request's
// context is cancelled once its connection closes: "cancelled") or when
// the grace period of a shutdown is over (ctx's cause KillShutdown). The
// slot is given back when f returns, before the answer is written.
func (s *Server) withSlot(w http.ResponseWriter, r *http.Request, size int64, f func(ctx context.Context)) (queued time.Duration, ok bool) {
	queuedAt := time.Now()
	if !s.queue(w, r, size) {
		return 0, false
	}
	started := time.Now()
	s.m.queueWait.Observe(started.Sub(queuedAt).Seconds())
	ctx, cancel := context.WithCancelCause(r.Context())
	stop := context.AfterFunc(s.killCtx, func() { cancel(nsjail.KillShutdown) })
	defer func() {
		stop()
		cancel(nil)
		s.adm.release(time.Since(started))
	}()
	f(ctx)
	return started.Sub(queuedAt), true
}

// notRun answers a request whose jail gave no result: err is why, cause
// what ended the run's context.
func (s *Server) notRun(w http.ResponseWriter, r *http.Request, cause, err error) {
	var fe *nsjail.FieldError
	if errors.As(err, &fe) {
		s.fail(w, r, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	// Ended before its jail started: not a set-up failure.
	if r.Context().Err() != nil {
		s.m.rejected.WithLabelValues("cancelled").Inc()
		s.log.Info("the client went away before its jail started", "err", err)
		panic(http.ErrAbortHandler)
	}
	if cause == nsjail.KillShutdown {
		s.shuttingDown(w, r)
		return
	}
	s.log.Error("jail set-up failed", "err", err)
	s.fail(w, r, http.StatusInternalServerError, "setup_failed", err.Error())
}

// logRun counts the run in the metrics and logs it; queued is how long it
// waited for its slot.
func (s *Server) logRun(r *http.Request, res *Result, jr *nsjail.Result, queued time.Duration) {
	s.m.observe(res)
	attrs := []any{"id", res.ID, "status", res.Status, "exit_code", res.ExitCode,
		"wall_ms", res.WallTimeMs, "cpu_ms", res.CPUTimeMs, "queue_ms", queued.Milliseconds()}
	if res.KillReason != "" {
		attrs = append(attrs, "kill_reason", res.KillReason)
	}
	if res.PeakMemoryBytes != nil {
		attrs = append(attrs, "peak_bytes", *res.PeakMemoryBytes)
	}
	if res.Seccomp != nil {
		attrs = append(attrs, "forbidden_syscall", res.Seccomp.Syscall)
	}
	if c := peerOf(r); c != nil {
		attrs = append(attrs, "peer_pid", c.Pid, "peer_uid", c.Uid)
	}
	if jr != nil {
		attrs = append(attrs, "jail_uid", jr.HostUID, "prepared", jr.Prepared, "environment", res.Environment, "start", res.Start)
		if jr.Prepared {
			s.m.prepared.Inc()
		}
	}
	s.log.Info("run", attrs...)
}

// writeResult answers 200 with the result, its large strings streamed
// from the captured bytes (resultjson.go) after a counting pass for the
// Content-Length.
func (s *Server) writeResult(w http.ResponseWriter, r *http.Request, res *Result) {
	e, err := res.encode()
	s.writeEncoded(w, r, e, err)
}

// writeEncoded is writeResult of a result encode made (err: it could not).
func (s *Server) writeEncoded(w http.ResponseWriter, r *http.Request, e *encoded, err error) {
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "internal", "cannot encode the answer: "+err.Error())
		return
	}
	n := e.len()
	// A client that does not read its answer frees the handler (and so
	// Shutdown) within answerTimeout. The deadline covers net/http's
	// flush of the answer's end after the handler returns, and net/http
	// clears it before the connection's next request.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.opts.answerTimeout))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	w.WriteHeader(http.StatusOK)
	_ = e.writeTo(w, int(min(n, 64<<10)))
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (s *Server) tooLarge(w http.ResponseWriter, r *http.Request) {
	s.fail(w, r, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("the request body is larger than this daemon's limit of %d bytes (admission.max_request_bytes)", s.opts.MaxRequestBytes))
}

// queueFull answers 429 for admission's refusal err (errQueueFull or a
// *queueBytesError).
func (s *Server) queueFull(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Set("Retry-After", strconv.Itoa(s.adm.retryAfter()))
	msg := fmt.Sprintf("%d jails are running and %d requests are waiting, the most this daemon allows; retry later", s.opts.MaxConcurrent, s.opts.QueueLength)
	if qb, ok := errors.AsType[*queueBytesError](err); ok {
		msg = fmt.Sprintf("the requests waiting for a slot hold %d bytes; with this one's %d that is more than this daemon allows (admission.max_queued_bytes = %d); retry later", qb.waiting, qb.size, s.opts.MaxQueuedBytes)
	}
	s.fail(w, r, http.StatusTooManyRequests, "queue_full", msg)
}

func (s *Server) shuttingDown(w http.ResponseWriter, r *http.Request) {
	code, msg := s.refusedCode()
	s.fail(w, r, http.StatusServiceUnavailable, code, msg)
}

// fail answers with the error object of docs/contract.md §2.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	s.m.rejected.WithLabelValues(code).Inc()
	s.log.Debug("request failed", "path", r.URL.Path, "status", status, "code", code, "message", msg)
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := jsontext.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"cannot encode the answer"}}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
