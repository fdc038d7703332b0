package nsjail

import (
	"errors"

	"agentjail/cgroup"
)

// Between calls a session holds no run slot, and must not compete with
// the runs that hold one: its jail's CPU bandwidth is cut to a sliver
// (cgroup.Group.SetIdle: one percent of one CPU) from its
// readiness to each call's send, and again from the call's end. A thread
// a call left spinning then barely runs until the next call. The cut is
// lifted before the session is ended (End), so that its processes die at
// once. The session's CPU budget and the calls' CPU limits count the
// group's time as before; its idle timeout is the daemon's timer, which
// the cut does not touch.

// idle cuts the session's CPU bandwidth, unless it ends or has ended.
// A group without the cpu controller has nothing to cut; a failed cut
// leaves the session its full bandwidth, as before.
func (s *Session) idle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.dead:
		return
	default:
	}
	if s.reason == "" {
		_ = s.j.cg.SetIdle(true)
	}
}

// wake gives the session its bandwidth back, for a call.
func (s *Session) wake() error {
	err := s.j.cg.SetIdle(false)
	if err != nil && !errors.Is(err, cgroup.ErrNoController) {
		return stageErr("cpu bandwidth", err)
	}
	return nil
}
