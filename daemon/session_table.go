package daemon

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"time"

	"agentjail/nsjail"
)

// reserve counts a session being started against admission.max_sessions,
// or answers 429 (503 when the daemon stops).
func (t *sessions) reserve(w http.ResponseWriter, r *http.Request) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	max := t.srv.opts.MaxSessions
	switch {
	case t.closed:
		t.srv.shuttingDown(w, r)
		return false
	case len(t.live)+t.starting >= max:
		w.Header().Set("Retry-After", fmt.Sprint(t.retryAfter()))
		msg := fmt.Sprintf("%d sessions are alive, the most this daemon keeps (admission.max_sessions); end one (DELETE /v1/sessions/{id}) or retry later", len(t.live)+t.starting)
		if max == 0 {
			msg = "this daemon keeps no sessions (admission.max_sessions = 0)"
		}
		t.srv.fail(w, r, http.StatusTooManyRequests, "too_many_sessions", msg)
		return false
	}
	t.starting++
	return true
}

func (t *sessions) unreserve() {
	t.mu.Lock()
	t.starting--
	t.mu.Unlock()
}

// retryAfter is when the first live session would end idle, in whole
// seconds, at least 1 (t.mu held).
func (t *sessions) retryAfter() int {
	soonest := time.Duration(0)
	for _, s := range t.live {
		if d := time.Until(s.expiresAt()); soonest == 0 || d < soonest {
			soonest = d
		}
	}
	return max(1, int((soonest+time.Second-1)/time.Second))
}

// add registers a started session (reserved before), arms its timers and
// watches for its end.
func (t *sessions) add(js *nsjail.Session, owner string, env *Environment, limits nsjail.Limits, idle time.Duration, nr *netRun) *session {
	s := &session{t: t, js: js, owner: owner, env: env, limits: limits, idle: idle, lastUsed: js.Created, net: nr}
	s.idler = time.AfterFunc(idle, func() { s.expire(nsjail.EndIdle) })
	s.lifer = time.AfterFunc(max(t.srv.opts.SessionMaxLifetime-time.Since(js.Created), 0), func() { s.expire(nsjail.EndLifetime) })
	t.made(js.ID)
	t.mu.Lock()
	t.starting--
	t.live[js.ID] = s
	t.mu.Unlock()
	t.created.Inc()
	t.watchers.Go(func() {
		<-js.Done()
		t.retire(s)
	})
	return s
}

// retire moves an ended session to the remembered ones.
func (t *sessions) retire(s *session) {
	s.mu.Lock()
	s.idler.Stop()
	s.lifer.Stop()
	s.mu.Unlock()
	info := s.info()
	err := s.js.Wait()
	s.net.close()
	t.mu.Lock()
	delete(t.live, s.js.ID)
	t.ended[s.js.ID] = &endedSession{owner: s.owner, info: info, at: time.Now()}
	t.order = append(t.order, s.js.ID)
	t.forget()
	t.mu.Unlock()
	t.endedBy.WithLabelValues(info.EndedReason).Inc()
	log := t.srv.log
	log.Info("session ended", "id", s.js.ID, "reason", info.EndedReason, "calls", info.Calls, "age_s", int(time.Since(s.js.Created).Seconds()))
	if err != nil {
		log.Warn("jail clean-up failed; the start-up sweep of the next instance removes what is left", "id", s.js.ID, "err", err)
	}
}

// forget drops the remembered sessions past rememberEnded or past
// maxRemembered, oldest first (t.mu held).
func (t *sessions) forget() {
	n := 0
	for _, id := range t.order {
		if len(t.order)-n <= maxRemembered && time.Since(t.ended[id].at) < t.srv.opts.sessionMemory {
			break
		}
		delete(t.ended, id)
		n++
	}
	t.order = t.order[n:]
}

// find is the session id of owner: live (its jail may have ended, not
// yet removed), or remembered ended. Another owner's is not found.
func (t *sessions) find(id string, owner string) (*session, *endedSession) {
	t.mu.Lock()
	t.forget()
	s, e := t.live[id], t.ended[id]
	t.mu.Unlock()
	switch {
	case owner == "": // no principal: nobody's
	case s != nil && s.owner == owner:
		return s, nil
	case e != nil && e.owner == owner:
		return nil, e
	}
	return nil, nil
}

// list is owner's sessions: the live ones and the remembered ended ones
// (not those deleted), oldest first.
func (t *sessions) list(owner string) []SessionInfo {
	t.mu.Lock()
	t.forget()
	var live []*session
	for _, s := range t.live {
		if s.owner == owner {
			live = append(live, s)
		}
	}
	out := []SessionInfo{}
	for _, id := range t.order {
		if e := t.ended[id]; e.owner == owner && e.info.EndedReason != string(nsjail.EndDeleted) {
			out = append(out, e.info)
		}
	}
	t.mu.Unlock()
	for _, s := range live {
		out = append(out, s.info())
	}
	slices.SortFunc(out, func(a, b SessionInfo) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// shutdown refuses new sessions and ends the idle ones; those in a call
// end with it (closeAll).
func (t *sessions) shutdown() {
	t.mu.Lock()
	t.closed = true
	live := slicesOf(t.live)
	t.mu.Unlock()
	for _, s := range live {
		s.mu.Lock()
		idle := !s.busy
		s.mu.Unlock()
		if idle {
			s.js.End(nsjail.EndShutdown)
		}
	}
}

// closeAll ends every session and waits until each is removed.
func (t *sessions) closeAll() {
	t.mu.Lock()
	t.closed = true
	live := slicesOf(t.live)
	t.mu.Unlock()
	for _, s := range live {
		s.js.End(nsjail.EndShutdown)
	}
	t.watchers.Wait()
}

func slicesOf(m map[string]*session) []*session {
	out := make([]*session, 0, len(m))
	for _, s := range m {
		out = append(out, s)
	}
	return out
}
