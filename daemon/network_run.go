package daemon

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"agentjail/egress"
)

// netRun is the proxy of one run or one session: the jail's set-up opens
// its listener (hook), the daemon closes it when the run or the session
// ends (close), which also ends every connection.
type netRun struct {
	e   *Egress
	pol *egress.Policy

	mu     sync.Mutex
	run    *egress.Run
	closed bool
}

func (e *Egress) newRun(pol *egress.Policy) *netRun { return &netRun{e: e, pol: pol} }

// hook is nsjail.Spec.Network: the listener at 127.0.0.1:3128 in the
// jail's network namespace, served from now on. A run whose jail ended
// before it got the request is tried again in another jail, which calls
// the hook again: the first jail's listener, where no program ran, is
// closed and its (empty) report dropped.
func (n *netRun) hook(netns *os.File) error {
	l, err := egress.ListenIn(netns)
	if err != nil {
		return fmt.Errorf("network egress: %w", err)
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		l.Close()
		return errors.New("network egress: the run has ended")
	}
	old := n.run
	n.run = n.e.proxy.Start(l, n.pol)
	n.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

// take is the report of a session's call: the connections since the
// last call.
func (n *netRun) take() *egress.Report {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	r := n.run
	n.mu.Unlock()
	if r == nil {
		return emptyReport()
	}
	return r.Take()
}

// close closes the listener and every connection and returns the report
// of what had not been reported yet. It may be called more than once,
// and on nil (no egress).
func (n *netRun) close() *egress.Report {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	r := n.run
	n.run, n.closed = nil, true
	n.mu.Unlock()
	if r == nil {
		return emptyReport()
	}
	return r.Close()
}

func emptyReport() *egress.Report { return &egress.Report{Connections: []egress.Connection{}} }
