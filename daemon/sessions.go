package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"agentjail/daemon/harness"
	"agentjail/nsjail"
)

// Sessions (docs/contract.md §6): a live interpreter in one jail across calls,
// as a notebook keeps its kernel. nsjail.Session is the jail and its
// calls; here are the endpoints, who owns which session, their idle and
// lifetime timers, one call at a time, the sessions the daemon remembers
// after their end (410 rather than 404), admission and metrics.
//
//	POST   /v1/sessions             create (201)
//	GET    /v1/sessions             the caller's sessions
//	GET    /v1/sessions/{id}        one session's state
//	DELETE /v1/sessions/{id}        end it (204)
//	POST   /v1/sessions/{id}/run    one call (200: a result)
//
// A session is its creator's (the peer uid, SO_PEERCRED): any other peer
// gets the 404 of an id that never existed. A call takes a run slot while
// it runs and waits for one as a run does; an idle session takes none.

// SessionRequest is the body of POST /v1/sessions. Only what is given is
// set; the rest takes the daemon's defaults.
type SessionRequest struct {
	Environment   string            `json:"environment,omitempty"`
	Limits        *RequestLimits    `json:"limits,omitempty"` // the session's: memory_bytes, pids, tmp_bytes, cpu_time_ms (its total), open_files, file_size_bytes
	Env           map[string]string `json:"env,omitempty"`
	Files         []RequestFile     `json:"files,omitempty"`
	IdleTimeoutMs *int64            `json:"idle_timeout_ms,omitempty"`
	Start         string            `json:"start,omitempty"`
	Network       *RequestNetwork   `json:"network,omitempty"` // egress for all its calls (session_network.go)
}

// CallRequest is the body of POST /v1/sessions/{id}/run. Only Code is
// required.
type CallRequest struct {
	Code    *string        `json:"code"`
	Command []string       `json:"command,omitempty"` // an argv instead of code (command.go)
	Stdin   *string        `json:"stdin,omitempty"`
	Files   []RequestFile  `json:"files,omitempty"`
	Collect []string       `json:"collect,omitempty"`
	Tests   *harness.Tests `json:"tests,omitempty"`
	Limits  *RequestLimits `json:"limits,omitempty"` // the call's: wall_time_ms, cpu_time_ms, output_bytes, display_bytes
	Stream  bool           `json:"stream,omitempty"` // answer with events as the output comes (stream.go)
}

// SessionLimits are a session's limits in force, in the request's names.
type SessionLimits struct {
	MemoryBytes   int64 `json:"memory_bytes"`
	Pids          int64 `json:"pids"`
	TmpBytes      int64 `json:"tmp_bytes"`
	CPUTimeMs     int64 `json:"cpu_time_ms"` // for all its calls together
	OpenFiles     int64 `json:"open_files"`
	FileSizeBytes int64 `json:"file_size_bytes"`
}

// SessionCreated is the answer to POST /v1/sessions.
type SessionCreated struct {
	ID            string        `json:"id"`
	Environment   string        `json:"environment"`
	Start         string        `json:"start"` // how its interpreter started: "warm" or "cold"
	Limits        SessionLimits `json:"limits"`
	IdleTimeoutMs int64         `json:"idle_timeout_ms"`
	ExpiresAt     string        `json:"expires_at"` // when it ends unless a call comes (RFC 3339, UTC)
	Node          string        `json:"node"`       // the node that holds it (remote_node.go)
	Endpoint      string        `json:"endpoint"`   // that node's remote.advertise; "" without [remote]
}

// SessionInfo is GET /v1/sessions/{id}, and each entry of GET /v1/sessions.
type SessionInfo struct {
	ID              string        `json:"id"`
	Environment     string        `json:"environment"`
	Start           string        `json:"start"`
	Created         string        `json:"created"`
	LastUsed        string        `json:"last_used"`
	ExpiresAt       string        `json:"expires_at"`
	Calls           int           `json:"calls"`
	Alive           bool          `json:"alive"`
	EndedReason     string        `json:"ended_reason"`
	MemoryBytes     *int64        `json:"memory_bytes"`      // in use now; null when the kernel cannot tell
	PeakMemoryBytes *int64        `json:"peak_memory_bytes"` // the most since it started; null when the kernel cannot tell
	CPUTimeMs       float64       `json:"cpu_time_ms"`       // since it started, every process
	Limits          SessionLimits `json:"limits"`
	IdleTimeoutMs   int64         `json:"idle_timeout_ms"`
	Node            string        `json:"node"`
	Endpoint        string        `json:"endpoint"`
}

// SessionState is where a session stands after a call.
type SessionState struct {
	ID          string `json:"id"`
	Calls       int    `json:"calls"`
	Alive       bool   `json:"alive"`
	EndedReason string `json:"ended_reason"`
}

// SessionResult is the answer to a call: the run result (§3.3) of this
// call, its trailing expression's value, and the session's state.
type SessionResult struct {
	*Result
	Value   *string
	Session SessionState
}

func (r *SessionResult) encode() (*encoded, error) {
	return r.Result.encodeWith(struct {
		resultRest
		Value   *string      `json:"value"`
		Session SessionState `json:"session"`
	}{resultRest{Result: r.Result}, r.Value, r.Session})
}

// sessionStarter is a Jailer that keeps sessions (nsjail.Runner).
type sessionStarter interface {
	StartSession(ctx context.Context, s *nsjail.Spec) (*nsjail.Session, error)
}

// How long, and how many, ended sessions are remembered: a call to one
// is 410 session_ended with its reason, later 404.
const (
	rememberEnded = 10 * time.Minute
	maxRemembered = 1024
)

// sessions are the daemon's live sessions and the ended ones it remembers.
type sessions struct {
	srv   *Server
	since atomic.Int64 // the daemon's start, in Unix ms: an id made before is an earlier daemon's (session_lost.go)

	mu       sync.Mutex
	live     map[string]*session
	starting int // being started: counted against max_sessions
	ended    map[string]*endedSession
	order    []string // ended, oldest first
	closed   bool     // the daemon stops: no more
	watchers sync.WaitGroup

	created prometheus.Counter
	endedBy *prometheus.CounterVec
	calls   *prometheus.CounterVec
}

// session is one live session.
type session struct {
	t      *sessions
	js     *nsjail.Session
	owner  string // principalOf its creator: "uid:N" or "token:NAME"
	env    *Environment
	limits nsjail.Limits
	idle   time.Duration
	net    *netRun // its egress proxy; nil without

	mu       sync.Mutex
	busy     bool
	calls    int
	lastUsed time.Time
	idler    *time.Timer
	lifer    *time.Timer
	ending   nsjail.EndReason // an expiry decided to end it
	expired  bool             // its lifetime passed during a call: it ends after it
}

// endedSession is what the daemon remembers of an ended session.
type endedSession struct {
	owner string
	info  SessionInfo
	at    time.Time
}

func newSessions(s *Server) *sessions {
	t := &sessions{srv: s, live: map[string]*session{}, ended: map[string]*endedSession{},
		created: prometheus.NewCounter(prometheus.CounterOpts{Name: "agentjail_sessions_created_total", Help: "Sessions started."}),
		endedBy: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentjail_sessions_ended_total",
			Help: "Sessions ended, by ended_reason (exited, deleted, idle_timeout, max_lifetime, memory_limit, cpu_timeout, wall_timeout, shutdown, ...)."}, []string{"reason"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentjail_session_calls_total",
			Help: "Calls run in sessions, by result status and kill reason (empty unless killed)."}, []string{"status", "kill_reason"}),
	}
	s.m.reg.MustRegister(t.created, t.endedBy, t.calls,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agentjail_sessions_alive", Help: "Sessions alive now."},
			func() float64 { t.mu.Lock(); defer t.mu.Unlock(); return float64(len(t.live)) }))
	t.since.Store(time.Now().UnixMilli())
	return t
}

// handleSessions is /v1/sessions: POST creates one, GET lists the
// caller's.
func (s *Server) handleSessions(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		s.createSession(w, r)
	case http.MethodGet, http.MethodHead:
		writeJSON(w, http.StatusOK, map[string]any{"sessions": s.sess.list(principalOf(r))})
	default:
		w.Header().Set("Allow", "GET, POST")
		s.fail(w, r, http.StatusMethodNotAllowed, "method_not_allowed", "use POST /v1/sessions to start a session, GET /v1/sessions to list yours")
	}
}

// handleSession is /v1/sessions/{id} and /v1/sessions/{id}/run.
func (s *Server) handleSession(w http.ResponseWriter, r *http.Request) {
	id, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1/sessions/"), "/")
	if rest != "" && rest != "run" {
		s.fail(w, r, http.StatusNotFound, "not_found", fmt.Sprintf("no endpoint %s %s (a session has /v1/sessions/{id} and /v1/sessions/{id}/run)", r.Method, r.URL.Path))
		return
	}
	want := map[string][]string{"": {http.MethodGet, http.MethodHead, http.MethodDelete}, "run": {http.MethodPost}}[rest]
	if !slices.Contains(want, r.Method) {
		w.Header().Set("Allow", strings.Join(want, ", "))
		s.fail(w, r, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("use %s %s", want[0], r.URL.Path))
		return
	}
	live, ended := s.sess.find(id, principalOf(r))
	if r.Method == http.MethodDelete && live != nil {
		// Removed before the answer, also when it had ended by itself
		// and its removal is under way (a failed clean-up is logged by
		// retire).
		already := live.js.Ended()
		live.js.End(nsjail.EndDeleted)
		_ = live.js.Wait()
		if already != "" {
			s.sessionEnded(w, r, id, already)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if live != nil && live.js.Ended() != "" { // not retired yet
		live, ended = nil, &endedSession{owner: live.owner, info: live.info()}
	}
	switch {
	case live == nil && ended == nil && s.sess.lost(id):
		s.sessionLost(w, r, id)
	case live == nil && ended == nil:
		s.fail(w, r, http.StatusNotFound, "not_found", fmt.Sprintf("no session %s of yours (it never existed, ended long ago, or is another user's)", id))
	case ended != nil && (rest == "run" || r.Method == http.MethodDelete || ended.info.EndedReason == string(nsjail.EndDeleted)):
		s.sessionEnded(w, r, id, nsjail.EndReason(ended.info.EndedReason))
	case ended != nil:
		writeJSON(w, http.StatusOK, ended.info)
	case rest == "run":
		s.callSession(w, r, live)
	default:
		writeJSON(w, http.StatusOK, live.info())
	}
}

// sessionEnded answers 410 for a session that has ended.
func (s *Server) sessionEnded(w http.ResponseWriter, r *http.Request, id string, reason nsjail.EndReason) {
	s.m.rejected.WithLabelValues("session_ended").Inc()
	writeJSON(w, http.StatusGone, map[string]any{"error": map[string]string{
		"code": "session_ended", "ended_reason": string(reason),
		"message": fmt.Sprintf("session %s has ended (%s): %s; start a new one (POST /v1/sessions)", id, reason, harness.EndedWhy(reason)),
	}})
}

// createSession is POST /v1/sessions.
func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	starter, ok := s.jailer.(sessionStarter)
	if !ok {
		s.fail(w, r, http.StatusNotFound, "not_found", "this daemon keeps no sessions")
		return
	}
	if !s.admitBody(w, r) {
		return
	}
	req, size, ok := decodeFor[SessionRequest](s, w, r)
	if !ok {
		return
	}
	spec, env, idle, err := req.spec(s.opts)
	var nr *netRun
	if err == nil {
		nr, err = req.network(s.opts.Policy, spec)
	}
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	if !s.sess.reserve(w, r) {
		return
	}
	reserved := true
	defer func() {
		if reserved {
			s.sess.unreserve()
			nr.close() // the session never started
		}
	}()
	if !s.track(w, r) {
		return
	}
	defer s.jobs.Done()
	var js *nsjail.Session
	var cause error
	started := time.Now()
	queued, ok := s.withSlot(w, r, size, func(ctx context.Context) {
		started = time.Now()
		js, err = startSessionWithFiles(ctx, starter, spec)
		cause = context.Cause(ctx)
	})
	if !ok {
		return
	}
	if err != nil {
		s.notRun(w, r, cause, err)
		return
	}
	if r.Context().Err() != nil { // the client left: nobody will ever call it
		js.End(nsjail.EndCancelled)
		_ = js.Wait()
		s.m.rejected.WithLabelValues("cancelled").Inc()
		panic(http.ErrAbortHandler)
	}
	reserved = false
	sess := s.sess.add(js, principalOf(r), env, spec.Limits, idle, nr)
	s.log.Info("session started", "id", js.ID, "environment", env.Name, "start", js.Start, "jail_uid", js.HostUID(),
		"start_ms", time.Since(started).Milliseconds(), "queue_ms", queued.Milliseconds(), "owner", sess.owner)
	writeJSON(w, http.StatusCreated, sess.created())
}

// callSession is POST /v1/sessions/{id}/run.
func (s *Server) callSession(w http.ResponseWriter, r *http.Request, sess *session) {
	if !s.admitBody(w, r) {
		return
	}
	req, size, ok := decodeFor[CallRequest](s, w, r)
	if !ok {
		return
	}
	w, st := s.streamAnswer(w, r, req.Stream)
	defer st.close()
	name, reason, busy := sess.begin()
	switch {
	case reason != "":
		s.sessionEnded(w, r, sess.js.ID, reason)
		return
	case busy:
		s.fail(w, r, http.StatusConflict, "session_busy", fmt.Sprintf("session %s is running a call; one call at a time: wait for its answer", sess.js.ID))
		return
	}
	ran := false
	defer func() { sess.finish(ran) }()
	c, err := req.callSpec(s.opts.Policy, sess, name)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	if !s.track(w, r) {
		return
	}
	defer s.jobs.Done()
	var cr *nsjail.CallResult
	queued, ok := s.withSlot(w, r, size, func(ctx context.Context) { cr, err = sess.js.Call(st.bind(ctx), c) })
	if !ok {
		return
	}
	var ended *nsjail.SessionEndedError
	var fe *nsjail.FieldError
	switch {
	case errors.As(err, &ended):
		s.sessionEnded(w, r, sess.js.ID, ended.Reason)
		return
	case errors.Is(err, nsjail.ErrSessionBusy):
		s.fail(w, r, http.StatusConflict, "session_busy", err.Error())
		return
	case errors.As(err, &fe):
		s.fail(w, r, http.StatusBadRequest, "invalid_request", err.Error())
		return
	case err != nil:
		s.log.Error("session call failed", "session", sess.js.ID, "err", err)
		s.fail(w, r, http.StatusInternalServerError, "setup_failed", err.Error())
		return
	}
	end := harness.ParseCallEnd(cr.End)
	if f := end.Refused; f != nil && f.I >= 0 && f.I < len(req.Files) {
		s.fail(w, r, http.StatusBadRequest, "invalid_request", fmt.Sprintf("files[%d].path: %s (the call's code did not run)", f.I, f.Error))
		return
	}
	ran = true
	res := sess.result(cr, req.Tests, end, c.Limits)
	sess.net.report(res.Result)
	if req.Command != nil {
		res.Feedback = commandFeedback(res.Feedback, cr.Result.Report, req.Command, res.Environment)
	}
	s.sess.calls.WithLabelValues(res.Status, res.KillReason).Inc()
	attrs := []any{"id", res.ID, "session", sess.js.ID, "status", res.Status, "exit_code", res.ExitCode,
		"wall_ms", res.WallTimeMs, "cpu_ms", res.CPUTimeMs, "queue_ms", queued.Milliseconds()}
	if res.KillReason != "" {
		attrs = append(attrs, "kill_reason", res.KillReason)
	}
	if cr.Ended != "" {
		attrs = append(attrs, "session_ended", cr.Ended)
	}
	s.log.Info("session call", attrs...)
	e, err := res.encode()
	s.writeEncoded(w, r, e, err)
}

// result is the contract's result of a call: as a run's (Job.result),
// with the feedback of a session, its value and the session's state.
func (sess *session) result(cr *nsjail.CallResult, tests *harness.Tests, end harness.CallEnd, limits nsjail.CallLimits) *SessionResult {
	jr := cr.Result
	res := fromJail(jr)
	res.Environment = sess.env.Name
	rep := harness.ParseReport(jr.Report, jr.ReportTruncated, tests)
	exc := rep.UncaughtException(jr)
	// An interrupt of agentjail's (a limit of the call) ended it, not an
	// exception of the program: the KeyboardInterrupt's traceback is in
	// stderr, its line in the feedback.
	interrupted := jr.Status == nsjail.StatusKilled && jr.Signal == syscall.SIGINT
	line := 0
	if interrupted && exc != nil {
		line, exc = exc.Line, nil
	}
	caught := harness.CaughtInterrupt(jr, cr.Ended, end.Caught, limits) // the code caught that interrupt and went on
	if caught != "" && jr.ExitCode == 0 {
		exc = nil // it ended well: no exception of its is uncaught
	}
	res.Exception = exc
	res.Tests = rep.Verdicts(tests, jr)
	res.Display, res.DisplayTruncated = rep.Display(limits.DisplayBytes)
	sess.mu.Lock()
	before := sess.calls // this call is not counted yet
	sess.mu.Unlock()
	var env *harness.Installed
	if e := sess.env; e != nil && e.PythonVersion != "" { // probed: its packages are known
		env = &harness.Installed{Environment: e.Name, Packages: e.Packages}
	}
	res.Feedback = harness.CallFeedback(harness.Call{Result: jr, Exception: exc, Tests: res.Tests, Spec: tests, Env: env,
		Before: before, Interrupted: interrupted, Line: line, Caught: caught, Ended: cr.Ended})
	if harness.Succeeded(res.Status, res.Tests) && cr.Ended == "" {
		res.Feedback = []string{}
	}
	for _, f := range jr.Files {
		res.Files = append(res.Files, resultFile(f))
	}
	return &SessionResult{Result: res, Value: end.Value, Session: SessionState{ID: sess.js.ID, Calls: before + 1, Alive: cr.Ended == "", EndedReason: string(cr.Ended)}}
}

// begin starts a call: name is its code's name; reason is why the
// session has ended ("" while it lives), busy that a call runs.
func (s *session) begin() (name string, reason nsjail.EndReason, busy bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := cmp.Or(s.ending, s.js.Ended()); r != "" {
		return "", r, false
	}
	if s.busy {
		return "", "", true
	}
	s.busy = true
	s.idler.Stop()
	s.lastUsed = time.Now()
	return harness.CallName(s.calls + 1), "", false
}

// finish ends the call begin started (ran: its code ran, and it counts),
// and arms the idle timer again; a lifetime that passed during it ends
// the session now.
func (s *session) finish(ran bool) {
	s.mu.Lock()
	s.busy = false
	if ran {
		s.calls++
	}
	s.lastUsed = time.Now()
	expired := s.expired
	if expired {
		s.ending = nsjail.EndLifetime
	} else {
		s.idler.Reset(s.idle)
	}
	s.mu.Unlock()
	if expired {
		s.js.End(nsjail.EndLifetime)
	}
}

// expire ends the session for an idle timeout or its lifetime; a
// lifetime that passes during a call ends it after the call.
func (s *session) expire(why nsjail.EndReason) {
	s.mu.Lock()
	if s.busy {
		s.expired = s.expired || why == nsjail.EndLifetime
		s.mu.Unlock()
		return
	}
	if s.ending == "" {
		s.ending = why
	}
	s.mu.Unlock()
	s.js.End(why)
}

// expiresAt is when the session ends unless a call comes: its idle
// timeout after its last use, at the latest its lifetime's end.
func (s *session) expiresAt() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.lastUsed.Add(s.idle)
	if end := s.js.Created.Add(s.t.srv.opts.SessionMaxLifetime); end.Before(at) {
		at = end
	}
	return at
}

func (s *session) sessionLimits() SessionLimits {
	l := s.limits
	return SessionLimits{MemoryBytes: l.MemoryBytes, Pids: l.Pids, TmpBytes: l.TmpBytes, CPUTimeMs: l.CPUTime.Milliseconds(),
		OpenFiles: l.OpenFiles, FileSizeBytes: l.FileSizeBytes}
}

func (s *session) created() SessionCreated {
	return SessionCreated{ID: s.js.ID, Environment: s.env.Name, Start: string(s.js.Start), Limits: s.sessionLimits(),
		IdleTimeoutMs: s.idle.Milliseconds(), ExpiresAt: rfc3339(s.expiresAt()), Node: s.t.srv.opts.Node, Endpoint: s.t.srv.opts.Advertise}
}

// info is the session's state now (its figures read from its cgroup).
func (s *session) info() SessionInfo {
	st := s.js.Stats()
	reason := s.js.Ended()
	s.mu.Lock()
	calls, last := s.calls, s.lastUsed
	s.mu.Unlock()
	info := SessionInfo{ID: s.js.ID, Environment: s.env.Name, Start: string(s.js.Start), Created: rfc3339(s.js.Created),
		LastUsed: rfc3339(last), ExpiresAt: rfc3339(s.expiresAt()), Calls: calls, Alive: reason == "", EndedReason: string(reason),
		CPUTimeMs: ms(st.CPUTime), Limits: s.sessionLimits(), IdleTimeoutMs: s.idle.Milliseconds(),
		Node: s.t.srv.opts.Node, Endpoint: s.t.srv.opts.Advertise}
	if st.MemoryBytes >= 0 {
		info.MemoryBytes = &st.MemoryBytes
	}
	if st.PeakMemoryBytes >= 0 {
		info.PeakMemoryBytes = &st.PeakMemoryBytes
	}
	return info
}

// rfc3339 is t in UTC to the millisecond, as the contract's times are.
func rfc3339(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
