package daemon

import (
	"fmt"
	"time"

	"agentjail/daemon/harness"
	"agentjail/nsjail"
)

// spec validates the request and makes the session's jail spec; env is
// its environment, idle its idle timeout.
func (q *SessionRequest) spec(o Options) (*nsjail.Spec, *Environment, time.Duration, error) {
	p := o.Policy
	env, err := p.environment(q.Environment)
	if err != nil {
		return nil, nil, 0, err
	}
	start, err := startMode(p.Start, q.Start)
	if err != nil {
		return nil, nil, 0, err
	}
	if err := q.Limits.only(ScopeSession, "a limit of each call, not of the session: give it with each call (POST /v1/sessions/{id}/run)"); err != nil {
		return nil, nil, 0, err
	}
	// A session runs many calls: its CPU budget, for all of them, is by
	// default the most one request may ask for.
	def := p.Defaults
	if p.Max != nil {
		def.CPUTime = p.Max.CPUTime
	}
	limits, err := q.Limits.apply(def, p.Max)
	if err != nil {
		return nil, nil, 0, err
	}
	idle := o.SessionIdleTimeout
	if v := q.IdleTimeoutMs; v != nil {
		most := o.SessionMaxIdleTimeout.Milliseconds()
		if *v < minIdleTimeout.Milliseconds() || *v > most {
			return nil, nil, 0, &nsjail.FieldError{Field: "idle_timeout_ms", Msg: fmt.Sprintf("must be from %d to %d (this daemon's sessions.max_idle_timeout), got %d", minIdleTimeout.Milliseconds(), most, *v)}
		}
		idle = time.Duration(*v) * time.Millisecond
	}
	spec := &nsjail.Spec{ID: newSessionID(o.Node), Python: env.Python, ReadOnlyMounts: env.ReadOnlyMounts, Etc: env.CurrentEtc(),
		DefaultEnv: env.Env, Env: q.Env, Start: start, Limits: limits, OnForbiddenSyscall: p.OnForbiddenSyscall}
	spec.Program, spec.ProgramName, spec.CodeFiles = harness.SessionProgram()
	if spec.Files, err = decodeFiles(q.Files); err != nil {
		return nil, nil, 0, err
	}
	spec.Report = true
	if err := spec.Validate(); err != nil {
		return nil, nil, 0, err
	}
	return spec, env, idle, nil
}

// startMode is the request's start ("" for the daemon's default).
func startMode(def nsjail.StartMode, asked string) (nsjail.StartMode, error) {
	switch asked {
	case "":
		return def, nil
	case string(nsjail.StartWarm), string(nsjail.StartCold):
		return nsjail.StartMode(asked), nil
	}
	return "", &nsjail.FieldError{Field: "start", Msg: fmt.Sprintf("must be \"warm\" or \"cold\", got %q", asked)}
}

// callSpec validates a call of sess and makes it; name is its code's name.
func (q *CallRequest) callSpec(p Policy, sess *session, name string) (*nsjail.CallSpec, error) {
	if err := checkProgram(q.Code, q.Command, q.Tests); err != nil {
		return nil, err
	}
	if q.Code != nil && len(*q.Code) > nsjail.MaxCodeBytes {
		n := len(*q.Code)
		return nil, &nsjail.FieldError{Field: "code", Msg: fmt.Sprintf("%d bytes, at most %d", n, nsjail.MaxCodeBytes)}
	}
	if err := q.Limits.only(ScopeCall, "a limit of the whole session, set when it is created (POST /v1/sessions)"); err != nil {
		return nil, err
	}
	limits, err := q.Limits.apply(p.Defaults, p.Max)
	if err != nil {
		return nil, err
	}
	if q.Tests != nil {
		if err := q.Tests.Validate(); err != nil {
			return nil, err
		}
	}
	files, err := decodeFiles(q.Files)
	if err != nil {
		return nil, err
	}
	if err := nsjail.ValidateFiles(files, sess.limits.TmpBytes); err != nil {
		return nil, err
	}
	if err := nsjail.ValidateCollect(q.Collect); err != nil {
		return nil, err
	}
	c := &nsjail.CallSpec{
		ID:            nsjail.NewID(),
		Payload:       q.payload(name, files),
		Limits:        callLimits(limits),
		Collect:       q.Collect,
		CollectLimits: p.Collect,
	}
	if q.Stdin != nil {
		c.Stdin = []byte(*q.Stdin)
	}
	return c, nil
}
