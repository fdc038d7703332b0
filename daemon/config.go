package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"os/user"
	"reflect"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pelletier/go-toml/v2"
	"golang.org/x/sys/unix"

	"agentjail/nsjail"
	"agentjail/seccomp"
)

// Default paths of docs/contract.md.
const (
	DefaultConfigPath = "/etc/agentjail/config.toml"
	defaultSocketPath = "/run/agentjail/agentjail.sock"
)

// Config is the daemon's configuration file (TOML, DefaultConfigPath). It
// is plain data: DefaultConfig gives every default, parseConfig lays a
// file over them and Validate checks the result. The accessor methods
// treat a zero field as its default, so a zero Config behaves like the
// defaults wherever a zero would make no sense.
type Config struct {
	Socket       SocketConfig                 `toml:"socket"`
	Peers        PeersConfig                  `toml:"peers"`
	Admission    AdmissionConfig              `toml:"admission"`
	Limits       LimitsConfig                 `toml:"limits"`
	Jail         JailConfig                   `toml:"jail"`
	Environments map[string]EnvironmentConfig `toml:"environments"`
	Collect      CollectConfig                `toml:"collect"`
	Sessions     SessionsConfig               `toml:"sessions"`
	Log          LogConfig                    `toml:"log"`
	Metrics      MetricsConfig                `toml:"metrics"` // metricslisten.go
	Remote       RemoteConfig                 `toml:"remote"`  // remote_config.go
	Network      NetworkConfig                `toml:"network"` // network_config.go

	// oldSpelling: the environment "default" comes from [jail] python
	// and read_only_mounts (errors about it name those keys).
	oldSpelling bool
}

// EnvironmentConfig is one Python runtime, [environments.NAME]: what a
// request that names it runs in. The environment "default" is what a
// request that names none gets; jail.python and jail.read_only_mounts
// are its older spelling.
type EnvironmentConfig struct {
	Python         string            `toml:"python"`           // interpreter: an absolute path that resolves inside /usr or one of read_only_mounts; default /usr/bin/python3
	ReadOnlyMounts []string          `toml:"read_only_mounts"` // host directories bound read-only, nosuid, nodev at the same path (a virtualenv, /opt/...); checked at start-up (CheckHost); default []
	Env            map[string]string `toml:"env"`              // variables every run of it gets (the request's own override them; PATH may be set, HOME and TMPDIR not); default {}
	Preload        []string          `toml:"preload"`          // modules its warm interpreter imports ahead; each must import at start-up; default []
}

// SocketConfig is the Unix socket the daemon listens on when it is not
// socket-activated (under systemd, agentjail.socket creates the socket and
// its path, mode and group come from that unit).
type SocketConfig struct {
	Path  string `toml:"path"`  // absolute path, at most 95 bytes; default /run/agentjail/agentjail.sock
	Group string `toml:"group"` // group name or numeric gid that owns the socket; "" = the daemon's own gid (default)
	Mode  string `toml:"mode"`  // octal permission bits as a string, 0 to 0777; default "0660"
}

// PeersConfig says who may use the daemon: a client whose SO_PEERCRED uid
// is in UIDs, or whose primary gid is in GIDs. Everyone else gets 403.
type PeersConfig struct {
	UIDs []uint32 `toml:"uids"` // allowed peer uids; default [0]
	GIDs []uint32 `toml:"gids"` // allowed peer primary gids; default []
}

// AdmissionConfig bounds the work the daemon accepts.
type AdmissionConfig struct {
	MaxConcurrent   int            `toml:"max_concurrent"`    // jails running at once, at least 1; default runtime.NumCPU()
	QueueLength     int            `toml:"queue_length"`      // requests waiting for a slot before 429, 0 = none wait; default 64
	MaxRequestBytes int64          `toml:"max_request_bytes"` // request body cap in bytes (413 above), at least 1 MiB; default 128 MiB
	MaxQueuedBytes  int64          `toml:"max_queued_bytes"`  // request bytes the waiting requests may hold together (429 above), at least max_request_bytes; default 512 MiB
	ShutdownGrace   ConfigDuration `toml:"shutdown_grace"`    // on SIGTERM, how long running jails may finish before they are killed; default "10s"
	MaxSessions     int            `toml:"max_sessions"`      // sessions alive at once (429 too_many_sessions above), 0 = no sessions; default 32
}

// SessionsConfig bounds the sessions' lives (CONTRACT §6): how long one may
// wait for its next call, and live in all.
type SessionsConfig struct {
	IdleTimeout    ConfigDuration `toml:"idle_timeout"`     // a session with no call for this long ends, unless its request says otherwise; at least 1s; default "10m"
	MaxIdleTimeout ConfigDuration `toml:"max_idle_timeout"` // the most a request's idle_timeout_ms may say; at least idle_timeout; default "1h"
	MaxLifetime    ConfigDuration `toml:"max_lifetime"`     // a session ends this long after it started (after the call running then); at least 1s; default "4h"
}

// LimitsConfig holds the limits a request gets when it omits one
// (Default) and the most it may ask for (Max; above it is a 400).
type LimitsConfig struct {
	Default LimitValues `toml:"default"` // default: docs/contract.md §3's (nsjail.DefaultLimits)
	Max     LimitValues `toml:"max"`     // default: the maxima of the limits table (limits.go)
}

// LimitValues has the names and units of the request's "limits" (docs/contract.md
// §3): a field for each row of the limits table (limits.go), named by its
// key. A zero field is one the file does not set: it takes the section's
// default.
type LimitValues struct {
	MemoryBytes   int64   `toml:"memory_bytes"`    // cgroup memory limit in bytes, swap off; at least 16 MiB; default 256 MiB
	WallTimeMs    int64   `toml:"wall_time_ms"`    // wall clock in ms from the exec of python3; default 10000
	CPUTimeMs     int64   `toml:"cpu_time_ms"`     // CPU time in ms of all the jail's processes; default 10000
	Pids          int64   `toml:"pids"`            // processes and threads; default 64
	OutputBytes   int64   `toml:"output_bytes"`    // stdout+stderr captured, in bytes; default 1 MiB
	TmpBytes      int64   `toml:"tmp_bytes"`       // tmpfs for /workspace, /tmp, /dev/shm, in bytes; default 64 MiB
	OpenFiles     int64   `toml:"open_files"`      // RLIMIT_NOFILE; default 256
	FileSizeBytes int64   `toml:"file_size_bytes"` // RLIMIT_FSIZE in bytes; default 32 MiB
	DisplayBytes  int64   `toml:"display_bytes"`   // the result's display entries, in bytes; default 2 MiB, at most 8 MiB
	CPUs          float64 `toml:"cpus"`            // CPU bandwidth of one jail in CPUs (cgroup quota); default 1
}

// JailConfig shapes every jail.
type JailConfig struct {
	Python             string   `toml:"python"`               // the environment "default"'s python (its older spelling); default /usr/bin/python3
	ReadOnlyMounts     []string `toml:"read_only_mounts"`     // the environment "default"'s read_only_mounts (its older spelling); default []
	Start              string   `toml:"start"`                // how a request that says nothing starts: "warm" (a fork of its environment's zygote; default) or "cold"
	WarmAhead          *int     `toml:"warm_ahead"`           // warm runs forked ahead of requests, per environment, 0 = none; default admission.max_concurrent
	ZygoteMaxForks     int      `toml:"zygote_max_forks"`     // runs a zygote forks before it is replaced by a fresh one (re-randomised); default 10000
	ZygoteMemoryBytes  int64    `toml:"zygote_memory_bytes"`  // memory limit of each zygote (its imports, its runs' set-up); default 2 GiB
	UIDBase            uint32   `toml:"uid_base"`             // first host uid (and gid) for jails, at least 65536; default 2000000000
	UIDCount           uint32   `toml:"uid_count"`            // how many, at least max_concurrent + prepared_jails + (per environment) 1 + warm_ahead; default 1000000
	PreparedJails      *int     `toml:"prepared_jails"`       // cold jails started ahead of requests, 0 = off; default admission.max_concurrent when start is "cold", else 0
	OnForbiddenSyscall string   `toml:"on_forbidden_syscall"` // "errno" (default) or "kill"; a request may override it
	ScratchNoexec      bool     `toml:"scratch_noexec"`       // /workspace, /tmp and /dev/shm noexec: a program cannot run what it writes; default false
}

// CollectConfig caps the files a request collects from /workspace.
type CollectConfig struct {
	FileBytes  int64 `toml:"file_bytes"`  // largest collected file in bytes, at most total_bytes; default 8 MiB
	TotalBytes int64 `toml:"total_bytes"` // all collected files together, in bytes; default 32 MiB
	Files      int   `toml:"files"`       // most files collected; 0 = the default (100), not off; default 100
}

// LogConfig is the daemon's log (stderr, which journald records).
type LogConfig struct {
	Level  string `toml:"level"`  // debug, info, warn or error; default info
	Format string `toml:"format"` // "text" (default, what journald shows) or "json"
}

// ConfigDuration is a time.Duration written in TOML as a Go duration
// string ("10s", "1m30s", "500ms"). (The name Duration in this package is
// the function that formats a duration for people.)
type ConfigDuration time.Duration

func (d ConfigDuration) String() string { return time.Duration(d).String() }

// MarshalText writes d as a Go duration string.
func (d ConfigDuration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText parses a Go duration string.
func (d *ConfigDuration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration (write e.g. \"10s\", \"1m30s\", \"500ms\")", b)
	}
	*d = ConfigDuration(v)
	return nil
}

// defaultMaxima are the default of [limits.max] (the limits table's).
func defaultMaxima() LimitValues {
	var v LimitValues
	for _, d := range limitTable {
		d.setConfig(&v, d.maxValue())
	}
	return v
}

// DefaultConfig returns a Config with every default filled in.
func DefaultConfig() *Config {
	return &Config{
		Socket: SocketConfig{Path: defaultSocketPath, Group: "", Mode: "0660"},
		Peers:  PeersConfig{UIDs: []uint32{0}, GIDs: []uint32{}},
		Admission: AdmissionConfig{
			MaxConcurrent:   runtime.NumCPU(),
			QueueLength:     64,
			MaxRequestBytes: 128 << 20,
			MaxQueuedBytes:  512 << 20,
			ShutdownGrace:   ConfigDuration(10 * time.Second),
			MaxSessions:     32,
		},
		Limits: LimitsConfig{Default: limitsOf(nsjail.DefaultLimits()), Max: defaultMaxima()},
		Jail: JailConfig{
			Python:             nsjail.DefaultPython,
			ReadOnlyMounts:     []string{},
			Start:              string(nsjail.StartWarm),
			ZygoteMaxForks:     10000,
			ZygoteMemoryBytes:  2 << 30,
			UIDBase:            nsjail.DefaultUIDBase,
			UIDCount:           nsjail.DefaultUIDSize,
			OnForbiddenSyscall: "errno",
		},
		Environments: map[string]EnvironmentConfig{DefaultEnvironment: {Python: nsjail.DefaultPython, ReadOnlyMounts: []string{}, Env: map[string]string{}, Preload: []string{}}},
		Collect:      CollectConfig{FileBytes: 8 << 20, TotalBytes: 32 << 20, Files: 100},
		Sessions:     SessionsConfig{IdleTimeout: ConfigDuration(10 * time.Minute), MaxIdleTimeout: ConfigDuration(time.Hour), MaxLifetime: ConfigDuration(4 * time.Hour)},
		Log:          LogConfig{Level: "info", Format: "text"},
		Network:      defaultNetwork(),
	}
}

// limitsOf is l in the configuration's units.
func limitsOf(l nsjail.Limits) LimitValues {
	var v LimitValues
	for _, d := range limitTable {
		d.setConfig(&v, d.get(&l))
	}
	return v
}

// nsjail converts l, taking each zero field from def.
func (l LimitValues) nsjail(def LimitValues) nsjail.Limits {
	var n nsjail.Limits
	for _, d := range limitTable {
		v := d.config(&l)
		if v.zero() {
			v = d.config(&def)
		}
		d.set(&n, v)
	}
	return n
}

// defaultLimits are the limits a request gets for each limit it omits.
func (c *Config) defaultLimits() nsjail.Limits {
	return c.Limits.Default.nsjail(limitsOf(nsjail.DefaultLimits()))
}

// maxLimits are the most a request may ask for.
func (c *Config) maxLimits() nsjail.Limits { return c.Limits.Max.nsjail(defaultMaxima()) }

// SocketMode is the socket's permission bits; 0660 when Mode is empty (or
// invalid, which Validate reports).
func (c *Config) SocketMode() os.FileMode {
	m, err := parseMode(c.Socket.Mode)
	if err != nil || c.Socket.Mode == "" {
		return 0o660
	}
	return m
}

func parseMode(s string) (os.FileMode, error) {
	if s == "" || strings.Trim(s, "01234567") != "" || len(s) > 4 {
		return 0, fmt.Errorf("%q is not an octal mode between 0 and 0777 (e.g. \"0660\")", s)
	}
	n, err := strconv.ParseUint(s, 8, 32)
	if err != nil || n > 0o777 {
		return 0, fmt.Errorf("%q is not an octal mode between 0 and 0777 (e.g. \"0660\")", s)
	}
	return os.FileMode(n), nil
}

// SocketGID resolves Group to a gid: -1 when Group is empty (keep the
// daemon's own), the number itself when it is numeric, else the group of
// that name (from /etc/group).
func (c *Config) SocketGID() (int, error) {
	g := c.Socket.Group
	if g == "" {
		return -1, nil
	}
	if n, err := strconv.ParseUint(g, 10, 32); err == nil {
		return int(n), nil
	}
	grp, err := user.LookupGroup(g)
	if err != nil {
		return 0, &ConfigError{Key: "socket.group", Msg: fmt.Sprintf("no group named %q on this host", g)}
	}
	gid, err := strconv.Atoi(grp.Gid)
	if err != nil {
		return 0, &ConfigError{Key: "socket.group", Msg: fmt.Sprintf("group %q has a non-numeric gid %q", g, grp.Gid)}
	}
	return gid, nil
}

var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

// SlogLevel is the log level; info when Level is empty.
func (c *Config) SlogLevel() slog.Level {
	if l, ok := logLevels[c.Log.Level]; ok {
		return l
	}
	return slog.LevelInfo
}

// forbiddenSyscallMode is the default of on_forbidden_syscall; errno when
// the field is empty.
func (c *Config) forbiddenSyscallMode() seccomp.Mode {
	if m, err := seccomp.ParseMode(c.Jail.OnForbiddenSyscall); err == nil {
		return m
	}
	return seccomp.ModeErrno
}

// maxPreparedJails bounds jail.prepared_jails, its default included: each
// waiting jail is a process with memory of its own and a uid.
const maxPreparedJails = 1024

// Prepared is how many cold jails the daemon keeps prepared ahead of
// requests: jail.prepared_jails, by default admission.max_concurrent
// (each running jail's replacement is being prepared while it runs) when
// jail.start is "cold", and none when it is "warm" (a warm run is forked
// ahead instead: jail.warm_ahead), at most maxPreparedJails.
func (c *Config) Prepared() int {
	if c.Jail.PreparedJails != nil {
		return *c.Jail.PreparedJails
	}
	if c.Jail.Start != string(nsjail.StartCold) {
		return 0
	}
	return min(c.Admission.MaxConcurrent, maxPreparedJails)
}

// WarmAhead is how many warm runs each environment keeps forked ahead of
// requests: jail.warm_ahead, by default admission.max_concurrent, at most
// maxPreparedJails.
func (c *Config) WarmAhead() int {
	if c.Jail.WarmAhead != nil {
		return *c.Jail.WarmAhead
	}
	return min(c.Admission.MaxConcurrent, maxPreparedJails)
}

// uidsNeeded is how many jail uids may be held at once: every running
// jail, every prepared one, per environment its zygote and its runs
// forked ahead, and every session.
func (c *Config) uidsNeeded() uint64 {
	return uint64(c.Admission.MaxConcurrent) + uint64(c.Prepared()) + uint64(len(c.Environments))*(1+uint64(c.WarmAhead())) +
		uint64(max(c.Admission.MaxSessions, 0))
}

// UIDRange is a fresh allocator of the jails' host uids (one per daemon);
// nsjail's default range when the fields are zero.
func (c *Config) UIDRange() *nsjail.UIDRange {
	r := &nsjail.UIDRange{Base: c.Jail.UIDBase, Size: c.Jail.UIDCount}
	if r.Base == 0 {
		r.Base = nsjail.DefaultUIDBase
	}
	if r.Size == 0 {
		r.Size = nsjail.DefaultUIDSize
	}
	return r
}

// ConfigError is one problem in a configuration: the key it is about, the
// line of the file that sets that key (0 when unknown, or when the value
// is a default), and what is wrong. parseConfig, LoadConfig and Validate
// return one or more of them (errors.As finds the first).
type ConfigError struct {
	Key     string // e.g. "limits.default.memory_bytes"; "" for a syntax error
	Line    int    // 1-based line in the file; 0 when not known
	Msg     string // what is wrong, e.g. "must be at least 1"
	Unknown bool   // the key is not a configuration key (Msg then suggests one)
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	switch {
	case e.Unknown:
		fmt.Fprintf(&b, "unknown key %q", e.Key)
		if e.Msg != "" {
			b.WriteString(" " + e.Msg)
		}
	case e.Key != "":
		b.WriteString(e.Key + ": " + e.Msg)
	default:
		b.WriteString(e.Msg)
	}
	return b.String()
}

// configErrors is several ConfigErrors, one per line of Error, each after
// prefix (e.g. "config /etc/agentjail/config.toml: ").
type configErrors struct {
	prefix string
	errs   []*ConfigError
}

func (e *configErrors) Error() string {
	lines := make([]string, len(e.errs))
	for i, err := range e.errs {
		lines[i] = e.prefix + err.Error()
	}
	return strings.Join(lines, "\n")
}

func (e *configErrors) Unwrap() []error {
	out := make([]error, len(e.errs))
	for i, err := range e.errs {
		out[i] = err
	}
	return out
}

func joinErrors(errs []*ConfigError) error {
	if len(errs) == 0 {
		return nil
	}
	// In the file's order; errors without a line keep theirs, after.
	line := func(e *ConfigError) int {
		if e.Line == 0 {
			return math.MaxInt
		}
		return e.Line
	}
	sort.SliceStable(errs, func(i, j int) bool {
		li, lj := line(errs[i]), line(errs[j])
		return li < lj || li == lj && li != math.MaxInt && errs[i].Key < errs[j].Key
	})
	return &configErrors{errs: errs}
}

// LoadConfig reads and parses the file at path. A missing file is an
// error (errors.Is(err, fs.ErrNotExist)): the caller decides whether a
// missing default path is fine. Every error starts with "config PATH: ".
func LoadConfig(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	// The file decides who may run code as which uid: a file anyone can
	// write is as good as no access control.
	if st.Mode().Perm()&0o002 != 0 {
		return nil, fmt.Errorf("config %s: is writable by every user (mode %04o); refusing it", path, st.Mode().Perm())
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		// Nor may anyone but this daemon's user (root) own it: its owner
		// could change it at will.
		if !TrustedOwner(sys.Uid) {
			return nil, fmt.Errorf("config %s: is owned by uid %d, not by root or the daemon's user; refusing it", path, sys.Uid)
		}
		// Nor write it as a group other than root's or the daemon's. (Root's
		// group is trusted as root is; the directory is not checked: whoever
		// may write /etc/agentjail may rename a file over this one.)
		if st.Mode().Perm()&0o020 != 0 && sys.Gid != 0 && int(sys.Gid) != os.Getegid() {
			return nil, fmt.Errorf("config %s: is writable by group %d (mode %04o); refusing it: chmod g-w, or chgrp to root", path, sys.Gid, st.Mode().Perm())
		}
		// With an access ACL the group bits are its mask: named users and
		// groups may write while the mask allows it, whatever the group.
		if st.Mode().Perm()&0o020 != 0 && hasACL(f) {
			return nil, fmt.Errorf("config %s: has an access ACL that may let other users write it (mode %04o); refusing it: setfacl -b, or chmod g-w", path, st.Mode().Perm())
		}
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	c, err := parseConfig(buf.Bytes())
	if err != nil {
		var ce *configErrors
		if errors.As(err, &ce) {
			ce.prefix = "config " + path + ": "
			return nil, ce
		}
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// parseConfig lays the TOML document data over DefaultConfig and validates
// the result. Unknown keys, values of the wrong type and invalid values are
// errors that name their key and, where the file sets it, its line.
func parseConfig(data []byte) (*Config, error) {
	lines, dup := keyLines(data)
	if dup != nil {
		return nil, joinErrors([]*ConfigError{dup})
	}
	// First as untyped data, to check every key and type against Config
	// with messages in the file's terms; then strictly into the struct.
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, joinErrors([]*ConfigError{decodeError(err)})
	}
	var errs []*ConfigError
	checkTable(doc, reflect.TypeFor[Config](), "", lines, &errs)
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	c := DefaultConfig()
	c.Environments = nil // the file's own, or the older [jail] keys' (normalizeEnvironments)
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return nil, joinErrors([]*ConfigError{decodeError(err)})
	}
	if errs := c.normalizeEnvironments(func(k string) bool { _, ok := lines[k]; return ok }); errs != nil {
		for _, e := range errs {
			e.Line = lines[e.Key]
		}
		return nil, joinErrors(errs)
	}
	if err := c.Validate(); err != nil {
		var ce *configErrors
		if errors.As(err, &ce) {
			for _, e := range ce.errs {
				k, _, _ := strings.Cut(e.Key, "[") // jail.read_only_mounts[1]
				e.Line = lines[k]
			}
			return nil, joinErrors(ce.errs)
		}
		return nil, err
	}
	return c, nil
}

// minJailUID keeps jails away from the uids of system and login accounts
// (and nobody, 65534), which a jail must never share.
const minJailUID = 65536

// Validate checks every value; each error names its key. It returns every
// problem at once (errors.As gives the first *ConfigError).
func (c *Config) Validate() error {
	var errs []*ConfigError
	bad := func(key, format string, a ...any) {
		errs = append(errs, &ConfigError{Key: key, Msg: fmt.Sprintf(format, a...)})
	}

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

	if len(c.Peers.UIDs) == 0 && len(c.Peers.GIDs) == 0 {
		bad("peers", "uids and gids are both empty: no client could ever be served")
	}

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
	c.validateSessions(bad)

	def, defOK := c.checkLimits("limits.default", c.Limits.Default, limitsOf(nsjail.DefaultLimits()), &errs)
	max, maxOK := c.checkLimits("limits.max", c.Limits.Max, defaultMaxima(), &errs)
	if defOK && maxOK {
		for _, d := range limitTable {
			if dv, mv := d.get(&def), d.get(&max); d.above(dv, mv) {
				bad("limits.default."+d.Key, "%s is above limits.max.%s (%s)", d.format(dv), d.Key, d.format(mv))
			}
		}
	}

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
	if _, err := seccomp.ParseMode(j.OnForbiddenSyscall); err != nil {
		bad("jail.on_forbidden_syscall", "must be \"errno\" or \"kill\", got %q", j.OnForbiddenSyscall)
	}

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

	if _, ok := logLevels[c.Log.Level]; !ok {
		bad("log.level", "must be debug, info, warn or error, got %q", c.Log.Level)
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		bad("log.format", "must be \"text\" or \"json\", got %q", c.Log.Format)
	}
	c.validateMetrics(bad)
	c.validateRemote(bad)
	c.validateNetwork(bad)
	return joinErrors(errs)
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

// hasACL reports whether f carries a POSIX access ACL (beyond its mode).
func hasACL(f *os.File) bool {
	n, err := unix.Fgetxattr(int(f.Fd()), "system.posix_acl_access", nil)
	return err == nil && n > 0
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
