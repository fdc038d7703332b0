package daemon

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"agentjail/nsjail"
	"agentjail/seccomp"
)

// minJailUID keeps jails away from the uids of system and login accounts
// (and nobody, 65534), which a jail must never share.
const minJailUID = 65536

// Validate checks every value; each error names its key. It returns every
// problem at once (errors.As gives the first *ConfigError), in the order
// of the file's sections.
func (c *Config) Validate() error {
	var errs []*ConfigError
	bad := func(key, format string, a ...any) {
		errs = append(errs, &ConfigError{Key: key, Msg: fmt.Sprintf(format, a...)})
	}
	c.validateSocket(bad)
	c.validatePeers(bad)
	c.validateAdmission(bad)
	c.validateSessions(bad)
	c.validateLimits(bad, &errs)
	c.validateJail(bad)
	c.validateUIDs(bad)
	c.validateCollect(bad)
	c.validateLog(bad)
	c.validateMetrics(bad)
	c.validateRemote(bad)
	c.validateNetwork(bad)
	return joinErrors(errs)
}

// validateSocket checks [socket].
func (c *Config) validateSocket(bad func(key, format string, a ...any)) {
	s := c.Socket
	if err := CheckSocketPath(s.Path); err != nil {
		bad("socket.path", "%v", err)
	}
	if g := s.Group; g != "" {
		if n, err := strconv.ParseUint(g, 10, 64); err == nil {
			if n >= math.MaxUint32 {
				bad("socket.group", "gid %d is out of range", n)
			}
		} else if strings.ContainsAny(g, ": \t\n\x00") {
			bad("socket.group", "%q is neither a group name nor a gid", g)
		}
	}
	if _, err := parseMode(s.Mode); err != nil {
		bad("socket.mode", "%v", err)
	}
}

// validatePeers checks [peers].
func (c *Config) validatePeers(bad func(key, format string, a ...any)) {
	if len(c.Peers.UIDs) == 0 && len(c.Peers.GIDs) == 0 {
		bad("peers", "uids and gids are both empty: no client could ever be served")
	}
}

// validateAdmission checks [admission].
func (c *Config) validateAdmission(bad func(key, format string, a ...any)) {
	a := c.Admission
	if a.MaxConcurrent < 1 {
		bad("admission.max_concurrent", "must be at least 1, got %d", a.MaxConcurrent)
	}
	if a.QueueLength < 0 {
		bad("admission.queue_length", "must be at least 0, got %d", a.QueueLength)
	}
	if a.MaxRequestBytes < 1<<20 {
		bad("admission.max_request_bytes", "must be at least 1 MiB (1048576), got %d", a.MaxRequestBytes)
	} else if a.MaxQueuedBytes < a.MaxRequestBytes {
		bad("admission.max_queued_bytes", "%d is below admission.max_request_bytes (%d): a request of the largest size could never wait", a.MaxQueuedBytes, a.MaxRequestBytes)
	}
	if a.ShutdownGrace < 0 {
		bad("admission.shutdown_grace", "must not be negative, got %v", a.ShutdownGrace)
	}
	if a.MaxSessions < 0 || a.MaxSessions > maxSessions {
		bad("admission.max_sessions", "must be from 0 (no sessions) to %d, got %d", maxSessions, a.MaxSessions)
	}
}

// validateLimits checks [limits.default] and [limits.max], each with
// nsjail's rules, and that no default is above its maximum.
func (c *Config) validateLimits(bad func(key, format string, a ...any), errs *[]*ConfigError) {
	def, defOK := c.checkLimits("limits.default", c.Limits.Default, limitsOf(nsjail.DefaultLimits()), errs)
	max, maxOK := c.checkLimits("limits.max", c.Limits.Max, defaultMaxima(), errs)
	if defOK && maxOK {
		for _, d := range limitTable {
			if dv, mv := d.get(&def), d.get(&max); d.above(dv, mv) {
				bad("limits.default."+d.Key, "%s is above limits.max.%s (%s)", d.format(dv), d.Key, d.format(mv))
			}
		}
	}
}

// validateJail checks [jail] but its uids, and the environments.
func (c *Config) validateJail(bad func(key, format string, a ...any)) {
	j := c.Jail
	c.validateEnvironments(bad)
	switch j.Start {
	case string(nsjail.StartWarm), string(nsjail.StartCold):
	default:
		bad("jail.start", "must be \"warm\" or \"cold\", got %q", j.Start)
	}
	if j.WarmAhead != nil && (*j.WarmAhead < 0 || *j.WarmAhead > maxPreparedJails) {
		bad("jail.warm_ahead", "must be from 0 (none) to %d, got %d", maxPreparedJails, *j.WarmAhead)
	}
	if j.ZygoteMaxForks < 1 {
		bad("jail.zygote_max_forks", "must be at least 1, got %d", j.ZygoteMaxForks)
	}
	if j.ZygoteMemoryBytes < 64<<20 {
		bad("jail.zygote_memory_bytes", "must be at least 64 MiB (67108864): a zygote holds an interpreter and its imports, got %d", j.ZygoteMemoryBytes)
	}
	if j.PreparedJails != nil && (*j.PreparedJails < 0 || *j.PreparedJails > maxPreparedJails) {
		bad("jail.prepared_jails", "must be from 0 (off) to %d, got %d", maxPreparedJails, *j.PreparedJails)
	}
	if _, err := seccomp.ParseMode(j.OnForbiddenSyscall); err != nil {
		bad("jail.on_forbidden_syscall", "must be \"errno\" or \"kill\", got %q", j.OnForbiddenSyscall)
	}
}

// validateUIDs checks jail.uid_base and jail.uid_count: the range holds
// every jail that may be alive at once, and no allowed peer.
func (c *Config) validateUIDs(bad func(key, format string, a ...any)) {
	j, a := c.Jail, c.Admission
	end := uint64(j.UIDBase) + uint64(j.UIDCount) // one past the last uid
	switch {
	case j.UIDBase < minJailUID:
		bad("jail.uid_base", "must be at least %d (below are root, system and login accounts and nobody), got %d", minJailUID, j.UIDBase)
	case j.UIDCount == 0:
		bad("jail.uid_count", "must be at least 1")
	case end > math.MaxUint32: // 2^32-1 is the kernel's invalid uid
		bad("jail.uid_count", "uid_base %d + uid_count %d passes the largest uid %d", j.UIDBase, j.UIDCount, uint32(math.MaxUint32-1))
	case a.MaxConcurrent >= 1 && c.Prepared() >= 0 && c.WarmAhead() >= 0 && uint64(j.UIDCount) < c.uidsNeeded():
		bad("jail.uid_count", "%d is below the %d uids jails may hold at once: admission.max_concurrent (%d) + jail.prepared_jails (%d) + admission.max_sessions (%d), and per environment (%d) a zygote and jail.warm_ahead (%d); every one needs its own uid",
			j.UIDCount, c.uidsNeeded(), a.MaxConcurrent, c.Prepared(), a.MaxSessions, len(c.Environments), c.WarmAhead())
	default:
		// A jail's uid is also its gid: an allowed peer id inside the range
		// would let a jailed process call the daemon.
		for _, p := range []struct {
			key string
			ids []uint32
		}{{"peers.uids", c.Peers.UIDs}, {"peers.gids", c.Peers.GIDs}} {
			for _, id := range p.ids {
				if uint64(id) >= uint64(j.UIDBase) && uint64(id) < end {
					bad(p.key, "%d is inside the jails' uid range (jail.uid_base %d, jail.uid_count %d)", id, j.UIDBase, j.UIDCount)
				}
			}
		}
	}
}

// validateCollect checks [collect].
func (c *Config) validateCollect(bad func(key, format string, a ...any)) {
	col := c.Collect
	if col.TotalBytes < 1 {
		bad("collect.total_bytes", "must be at least 1, got %d", col.TotalBytes)
	}
	switch {
	case col.FileBytes < 1:
		bad("collect.file_bytes", "must be at least 1, got %d", col.FileBytes)
	case col.TotalBytes >= 1 && col.FileBytes > col.TotalBytes:
		bad("collect.file_bytes", "%d is above collect.total_bytes (%d)", col.FileBytes, col.TotalBytes)
	}
	if col.Files < 0 {
		bad("collect.files", "must be at least 0, got %d", col.Files)
	}
}

// validateLog checks [log].
func (c *Config) validateLog(bad func(key, format string, a ...any)) {
	if _, ok := logLevels[c.Log.Level]; !ok {
		bad("log.level", "must be debug, info, warn or error, got %q", c.Log.Level)
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		bad("log.format", "must be \"text\" or \"json\", got %q", c.Log.Format)
	}
}

// maxMs is the largest millisecond count a time.Duration holds.
const maxMs = math.MaxInt64 / int64(time.Millisecond)

// checkLimits validates one limits section with nsjail's rules, naming the
// section's keys, and returns it converted.
func (c *Config) checkLimits(section string, l, def LimitValues, errs *[]*ConfigError) (nsjail.Limits, bool) {
	for _, d := range limitTable {
		if v := d.config(&l); d.Unit == UnitMs && v.n > maxMs {
			*errs = append(*errs, &ConfigError{Key: section + "." + d.Key, Msg: fmt.Sprintf("%d is out of range (at most %d)", v.n, maxMs)})
			return nsjail.Limits{}, false
		}
	}
	n := l.nsjail(def)
	if err := n.Validate(); err != nil {
		var fe *nsjail.FieldError
		if errors.As(err, &fe) {
			*errs = append(*errs, &ConfigError{Key: section + strings.TrimPrefix(fe.Field, "limits"), Msg: fe.Msg})
		} else {
			*errs = append(*errs, &ConfigError{Key: section, Msg: err.Error()})
		}
		return n, false
	}
	return n, true
}

// maxSessions bounds admission.max_sessions: each live session holds a
// process, a uid, its memory and, started cold, a thread of the daemon.
const maxSessions = 4096

// minIdleTimeout is the shortest idle timeout a session may have, in the
// configuration and in a request.
const minIdleTimeout = time.Second

// validateSessions checks [sessions].
func (c *Config) validateSessions(bad func(key, format string, a ...any)) {
	s := c.Sessions
	if time.Duration(s.IdleTimeout) < minIdleTimeout {
		bad("sessions.idle_timeout", "must be at least %v, got %v", minIdleTimeout, s.IdleTimeout)
	} else if s.MaxIdleTimeout < s.IdleTimeout {
		bad("sessions.max_idle_timeout", "%v is below sessions.idle_timeout (%v)", s.MaxIdleTimeout, s.IdleTimeout)
	}
	if time.Duration(s.MaxLifetime) < minIdleTimeout {
		bad("sessions.max_lifetime", "must be at least %v, got %v", minIdleTimeout, s.MaxLifetime)
	}
}
