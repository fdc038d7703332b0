package daemon

import (
	"fmt"
	"net/http"
	"strings"

	"agentjail/nsjail"
)

// Node identity (docs/contract.md §7): a session's id names the node that
// holds it, "s-" ULID "." NODE, so that a call that reaches another node
// is told where to go (421) rather than given a new, empty session.

// newSessionID is a session id of node.
func newSessionID(node string) string { return nsjail.NewSessionID() + "." + node }

// sessionNode is the node a session id names; "" for an id without one
// (made before ids named their node), taken as this node's.
func sessionNode(id string) string {
	_, node, _ := strings.Cut(strings.TrimPrefix(id, "s-"), ".")
	return node
}

// sessionHere answers 421 session_elsewhere for a session id of another
// node; it runs after the peer or token check.
func (s *Server) sessionHere(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1/sessions/"), "/")
		if node := sessionNode(id); node != "" && node != s.opts.Node {
			s.m.rejected.WithLabelValues("session_elsewhere").Inc()
			writeJSON(w, http.StatusMisdirectedRequest, map[string]any{"error": map[string]string{
				"code": "session_elsewhere", "node": node,
				"message": fmt.Sprintf("session %s is held by node %s, not by this node (%s): send its calls to %s; sessions never move", id, node, s.opts.Node, node),
			}})
			return
		}
		next.ServeHTTP(w, r)
	})
}
