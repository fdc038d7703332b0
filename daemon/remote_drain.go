package daemon

import (
	"net/http"
)

// Draining (docs/contract.md §7): before a node goes away (a Kubernetes
// preStop hook, then SIGTERM), the daemon stops taking new work while it
// still answers: GET /v1/health turns 503 "draining" at once, so that the
// engine takes the node out of its endpoints; new runs and sessions get
// 503 draining; runs and session calls in flight go on. SIGTERM then
// stops the daemon (Shutdown) with its grace.

// Drain makes the server drain; it reports whether it was not draining
// already. Its listeners stay open.
func (s *Server) Drain() bool {
	s.jobsMu.Lock()
	first := !s.drainAsked.Swap(true)
	s.draining.Store(true)
	s.jobsMu.Unlock()
	if first {
		s.log.Info("draining: new runs and sessions are refused, those in flight go on", "running", s.adm.running(), "queued", s.adm.waiting())
	}
	return first
}

// drainRoute serves POST /v1/drain, on the Unix socket only (the remote
// listener does not have it: a token does not let its holder take a
// node out of service).
func (s *Server) drainRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/drain" {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			s.fail(w, r, http.StatusMethodNotAllowed, "method_not_allowed", "use POST /v1/drain")
			return
		}
		s.Drain()
		writeJSON(w, http.StatusOK, map[string]any{"status": "draining", "running": s.adm.running(), "queued": s.adm.waiting()})
	})
}

// refusedCode is the error code of new work refused while draining or
// stopping: "draining" in both cases (docs/contract.md §7: SIGTERM drains
// too), so that a client sends the work to another node. Only the message
// tells the two apart.
func (s *Server) refusedCode() (code, msg string) {
	if s.drainAsked.Load() && !s.stopping.Load() {
		return "draining", "this node is draining (it is about to go away): send the request to another node"
	}
	return "draining", "the daemon is shutting down (draining): send the request to another node, or retry against its next instance"
}
