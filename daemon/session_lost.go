package daemon

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Sessions of an earlier daemon (docs/contract.md §6.6): sessions live
// in the daemon's memory, and their jails die with it. A session id holds
// the time it was made (its ULID's milliseconds), so an id this daemon
// does not know, made before this daemon started, was made by an earlier
// daemon of this node (killed, or stopped and started again): it is lost,
// not unknown, and the answer says so (410 session_lost), so that a
// client starts a new session rather than looking for a typo.
//
// The answer to an id this daemon does not know (for this peer) depends on
// the id alone: another user's session was made by this daemon, after its
// start, and gets the 404 of a made-up id of the same time. Nothing about
// other users' sessions can be learnt from it.

// crockford is the ULID alphabet (nsjail/ids.go).
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// sessionIDTime is when session id was made: the milliseconds of its
// ULID, "s-" ULID ["." NODE]. ok is false for an id of another form.
func sessionIDTime(id string) (t time.Time, ok bool) {
	u, _, _ := strings.Cut(strings.TrimPrefix(id, "s-"), ".")
	if !strings.HasPrefix(id, "s-") || len(u) != 26 || u[0] > '7' { // 26 characters of 5 bits hold 128 bits: the first holds 3
		return time.Time{}, false
	}
	var ms int64
	for i := 0; i < 26; i++ {
		d := strings.IndexByte(crockford, u[i])
		if d < 0 {
			return time.Time{}, false
		}
		if i < 10 { // the first 10 characters: the 48 bits of milliseconds
			ms = ms<<5 | int64(d)
		}
	}
	return time.UnixMilli(ms), true
}

// lost says whether id, which this daemon does not know, was made by an
// earlier daemon: before this one started.
func (t *sessions) lost(id string) bool {
	made, ok := sessionIDTime(id)
	return ok && made.UnixMilli() < t.since.Load()
}

// made notes a session id this daemon made. The ids' times are the wall
// clock's, which may be stepped back after the start (an NTP step): the
// start then moves back to the id's time, so that this daemon's own
// sessions are never taken for an earlier daemon's.
func (t *sessions) made(id string) {
	at, ok := sessionIDTime(id)
	for ok {
		since := t.since.Load()
		if at.UnixMilli() >= since || t.since.CompareAndSwap(since, at.UnixMilli()) {
			return
		}
	}
}

// sessionLost answers 410 session_lost for a session of an earlier daemon.
func (s *Server) sessionLost(w http.ResponseWriter, r *http.Request, id string) {
	s.m.rejected.WithLabelValues("session_lost").Inc()
	writeJSON(w, http.StatusGone, map[string]any{"error": map[string]string{
		"code": "session_lost",
		"message": fmt.Sprintf("session %s was started by an earlier run of the agentjail daemon on this node, which has stopped since "+
			"(this one started at %s; a session lives in the daemon that started it): its interpreter, variables and files are gone; "+
			"start a new session (POST /v1/sessions) and run its setup again", id, rfc3339(time.UnixMilli(s.sess.since.Load()))),
	}})
}
