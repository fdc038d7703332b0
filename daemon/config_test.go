package daemon

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/nsjail"
	"agentjail/seccomp"
)

// configKeys lists every key of Config, dotted, in declaration order.
func configKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := prefix + f.Tag.Get("toml")
		switch {
		case f.Type.Kind() == reflect.Struct:
			keys = append(keys, configKeys(f.Type, name+".")...)
		case f.Type.Kind() == reflect.Map && f.Type.Elem().Kind() == reflect.Struct:
			keys = append(keys, configKeys(f.Type.Elem(), name+".NAME.")...)
		default:
			keys = append(keys, name)
		}
	}
	return keys
}

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	require.NoError(t, c.Validate())
	assert.Equal(t, nsjail.DefaultLimits(), c.defaultLimits())
	assert.Equal(t, nsjail.Limits{
		MemoryBytes: 4 << 30, WallTime: 300 * time.Second, CPUTime: 300 * time.Second, Pids: 1024,
		OutputBytes: 64 << 20, TmpBytes: 1 << 30, OpenFiles: 4096, FileSizeBytes: 1 << 30, CPUs: 1024, DisplayBytes: 8 << 20,
	}, c.maxLimits())
	assert.Equal(t, os.FileMode(0o660), c.SocketMode())
	gid, err := c.SocketGID()
	require.NoError(t, err)
	assert.Equal(t, -1, gid)
	assert.Equal(t, slog.LevelInfo, c.SlogLevel())
	assert.Equal(t, seccomp.ModeErrno, c.forbiddenSyscallMode())
	r := c.UIDRange()
	assert.Equal(t, uint32(nsjail.DefaultUIDBase), r.Base)
	assert.Equal(t, uint32(nsjail.DefaultUIDSize), r.Size)
	assert.Equal(t, runtime.NumCPU(), c.Admission.MaxConcurrent)
	assert.Equal(t, 10*time.Second, time.Duration(c.Admission.ShutdownGrace))
	assert.Equal(t, []uint32{0}, c.Peers.UIDs)
	assert.Equal(t, defaultSocketPath, c.Socket.Path)
}

// The accessors of a zero Config give the defaults, never a zero limit,
// mode or range.
func TestZeroConfigAccessors(t *testing.T) {
	var c Config
	assert.Equal(t, nsjail.DefaultLimits(), c.defaultLimits())
	assert.Equal(t, DefaultConfig().maxLimits(), c.maxLimits())
	assert.Equal(t, os.FileMode(0o660), c.SocketMode())
	gid, err := c.SocketGID()
	require.NoError(t, err)
	assert.Equal(t, -1, gid)
	assert.Equal(t, slog.LevelInfo, c.SlogLevel())
	assert.Equal(t, seccomp.ModeErrno, c.forbiddenSyscallMode())
	assert.Equal(t, DefaultConfig().UIDRange().Base, c.UIDRange().Base)
	assert.Equal(t, DefaultConfig().UIDRange().Size, c.UIDRange().Size)
	// Validate does not pretend a zero Config is a usable file.
	assert.ErrorContains(t, c.Validate(), "admission.max_concurrent: must be at least 1")
}

func TestParseEmptyIsDefault(t *testing.T) {
	for _, doc := range []string{"", "# nothing\n", "[socket]\n[limits.default]\n"} {
		c, err := parseConfig([]byte(doc))
		require.NoError(t, err, doc)
		assert.Equal(t, DefaultConfig(), c, doc)
	}
}

// fullConfigFile gives every key of Config (TestParseFullFile).
const fullConfigFile = `
[socket]
path = "/run/aj/s.sock"
group = "daemon"
mode = "0640"
[peers]
uids = [0, 1000]
gids = [1001]
[admission]
max_concurrent = 3
queue_length = 0
max_request_bytes = 2097152
max_queued_bytes = 4194304
shutdown_grace = "1m30s"
max_sessions = 5
[limits.default]
memory_bytes = 134217728
wall_time_ms = 5000
cpu_time_ms = 4000
pids = 32
output_bytes = 65536
tmp_bytes = 8388608
open_files = 64
file_size_bytes = 1048576
display_bytes = 1048576
cpus = 0.5
[limits.max]
memory_bytes = 1073741824
wall_time_ms = 60000
cpu_time_ms = 60000
pids = 128
output_bytes = 1048576
tmp_bytes = 16777216
open_files = 512
file_size_bytes = 8388608
display_bytes = 4194304
cpus = 2
[jail]
python = "/opt/venv/bin/python3"
read_only_mounts = ["/opt/venv"]
uid_base = 100000
uid_count = 1000
prepared_jails = 1
on_forbidden_syscall = "kill"
scratch_noexec = true
start = "cold"
warm_ahead = 3
zygote_max_forks = 50
zygote_memory_bytes = 1073741824
[environments.sci]
python = "/opt/sci/bin/python3"
read_only_mounts = ["/opt/sci"]
env = { OMP_NUM_THREADS = "2", LANG = "C.UTF-8" }
preload = ["numpy", "matplotlib.pyplot"]
[collect]
file_bytes = 1024
total_bytes = 4096
files = 0
[sessions]
idle_timeout = "2m"
max_idle_timeout = "30m"
max_lifetime = "1h"
[log]
level = "debug"
format = "json"
[metrics]
listen = "127.0.0.1:9464"
[remote]
listen = "0.0.0.0:8443"
tls_cert = "/etc/agentjail/tls/tls.crt"
tls_key = "/etc/agentjail/tls/tls.key"
client_ca = "/etc/agentjail/tls/ca.crt"
tokens_file = "/etc/agentjail/tokens"
node = "node-1"
advertise = "node-1.agentjail:8443"
insecure_plaintext = false
[network]
inline_allow = true
private_allow = ["10.0.0.5", "10.20.0.0/16"]
resolver = "10.0.0.2:53"
max_connections = 8
max_bytes = 1048576
connect_timeout_ms = 2000
idle_timeout_ms = 3000
[network.policies.pypi]
allow = ["pypi.org:443", "*.pythonhosted.org:443"]
`

// fullConfig is what fullConfigFile says.
func fullConfig() *Config {
	return &Config{
		Socket:    SocketConfig{Path: "/run/aj/s.sock", Group: "daemon", Mode: "0640"},
		Peers:     PeersConfig{UIDs: []uint32{0, 1000}, GIDs: []uint32{1001}},
		Admission: AdmissionConfig{MaxConcurrent: 3, QueueLength: 0, MaxRequestBytes: 2 << 20, MaxQueuedBytes: 4 << 20, ShutdownGrace: ConfigDuration(90 * time.Second), MaxSessions: 5},
		Limits: LimitsConfig{
			Default: LimitValues{MemoryBytes: 128 << 20, WallTimeMs: 5000, CPUTimeMs: 4000, Pids: 32, OutputBytes: 64 << 10, TmpBytes: 8 << 20, OpenFiles: 64, FileSizeBytes: 1 << 20, DisplayBytes: 1 << 20, CPUs: 0.5},
			Max:     LimitValues{MemoryBytes: 1 << 30, WallTimeMs: 60000, CPUTimeMs: 60000, Pids: 128, OutputBytes: 1 << 20, TmpBytes: 16 << 20, OpenFiles: 512, FileSizeBytes: 8 << 20, DisplayBytes: 4 << 20, CPUs: 2},
		},
		Jail: JailConfig{Python: "/opt/venv/bin/python3", ReadOnlyMounts: []string{"/opt/venv"}, UIDBase: 100000, UIDCount: 1000, PreparedJails: ptr(1), OnForbiddenSyscall: "kill",
			ScratchNoexec: true, Start: "cold", WarmAhead: ptr(3), ZygoteMaxForks: 50, ZygoteMemoryBytes: 1 << 30},
		Environments: map[string]EnvironmentConfig{
			"default": {Python: "/opt/venv/bin/python3", ReadOnlyMounts: []string{"/opt/venv"}, Env: map[string]string{}, Preload: []string{}},
			"sci": {Python: "/opt/sci/bin/python3", ReadOnlyMounts: []string{"/opt/sci"}, Env: map[string]string{"OMP_NUM_THREADS": "2", "LANG": "C.UTF-8"},
				Preload: []string{"numpy", "matplotlib.pyplot"}},
		},
		Collect:  CollectConfig{FileBytes: 1024, TotalBytes: 4096, Files: 0},
		Sessions: SessionsConfig{IdleTimeout: ConfigDuration(2 * time.Minute), MaxIdleTimeout: ConfigDuration(30 * time.Minute), MaxLifetime: ConfigDuration(time.Hour)},
		Log:      LogConfig{Level: "debug", Format: "json"},
		Metrics:  MetricsConfig{Listen: "127.0.0.1:9464"},
		Remote: RemoteConfig{Listen: "0.0.0.0:8443", TLSCert: "/etc/agentjail/tls/tls.crt", TLSKey: "/etc/agentjail/tls/tls.key",
			ClientCA: "/etc/agentjail/tls/ca.crt", TokensFile: "/etc/agentjail/tokens", Node: "node-1", Advertise: "node-1.agentjail:8443"},
		Network: NetworkConfig{InlineAllow: true, PrivateAllow: []string{"10.0.0.5", "10.20.0.0/16"}, Resolver: "10.0.0.2:53", MaxConnections: 8,
			MaxBytes: 1 << 20, ConnectTimeoutMs: 2000, IdleTimeoutMs: 3000,
			Policies: map[string]NetworkPolicyConfig{"pypi": {Allow: []string{"pypi.org:443", "*.pythonhosted.org:443"}}}},
		oldSpelling: true,
	}
}

func TestParseFullFile(t *testing.T) {
	doc := fullConfigFile
	c, err := parseConfig([]byte(doc))
	require.NoError(t, err)
	assert.Equal(t, fullConfig(), c)
	assert.Equal(t, []string{"default", "sci"}, c.EnvironmentNames())
	assert.Equal(t, 3, c.WarmAhead())
	assert.Equal(t, os.FileMode(0o640), c.SocketMode())
	assert.Equal(t, slog.LevelDebug, c.SlogLevel())
	assert.Equal(t, seccomp.ModeKill, c.forbiddenSyscallMode())
	assert.Equal(t, 5*time.Second, c.defaultLimits().WallTime)
	assert.Equal(t, 4*time.Second, c.defaultLimits().CPUTime)
	assert.Equal(t, 0.5, c.defaultLimits().CPUs)
	assert.Equal(t, int64(128), c.maxLimits().Pids)
	assert.Equal(t, uint32(100000), c.UIDRange().Base)
	assert.Equal(t, uint32(1000), c.UIDRange().Size)
	// Every key of Config is in the document: a new field must come with a
	// line in fullConfigFile (and in scripts/packaging/config.toml and the README).
	for _, k := range configKeys(reflect.TypeFor[Config](), "") {
		_, name, _ := strings.Cut(k, ".")
		if strings.HasPrefix(k, "limits.") || strings.HasPrefix(k, "environments.") || strings.HasPrefix(k, "network.policies.") {
			name = k[strings.LastIndex(k, ".")+1:]
		}
		assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(name)+` = `, doc, "key %s", k)
	}
}

// A section the file gives in part keeps the defaults of the rest, and an
// array the file gives replaces the default one.
func TestParsePartial(t *testing.T) {
	c, err := parseConfig([]byte("[limits.default]\nmemory_bytes = 536870912\n[peers]\nuids = [1000]\n"))
	require.NoError(t, err)
	want := nsjail.DefaultLimits()
	want.MemoryBytes = 512 << 20
	assert.Equal(t, want, c.defaultLimits())
	assert.Equal(t, DefaultConfig().Limits.Max, c.Limits.Max)
	assert.Equal(t, []uint32{1000}, c.Peers.UIDs)
	assert.Equal(t, DefaultConfig().Admission, c.Admission)

	// 0 in a limits section means "not set": the default.
	c, err = parseConfig([]byte("[limits.max]\npids = 0\n"))
	require.NoError(t, err)
	assert.Equal(t, int64(1024), c.maxLimits().Pids)

	// Dotted keys and inline tables are TOML too.
	c, err = parseConfig([]byte("limits.default.pids = 16\nlog = { level = \"warn\" }\n"))
	require.NoError(t, err)
	assert.Equal(t, int64(16), c.defaultLimits().Pids)
	assert.Equal(t, slog.LevelWarn, c.SlogLevel())
}

// Every bad value is an error that names its key, and the line when the
// file sets that key.
func TestBadValuesNameTheirKey(t *testing.T) {
	cases := []struct{ doc, want string }{
		// types
		{"[admission]\nmax_concurrent = \"x\"", `line 2: admission.max_concurrent: must be an integer, got a string ("x")`},
		{"[admission]\nmax_concurrent = 1.5", "line 2: admission.max_concurrent: must be an integer, got a float (1.5)"},
		{"[admission]\nqueue_length = true", "line 2: admission.queue_length: must be an integer, got a boolean (true)"},
		{"[admission]\nshutdown_grace = 5", `line 2: admission.shutdown_grace: must be a string, got an integer (5); write it quoted, e.g. "10s"`},
		{"[admission]\nshutdown_grace = \"ten\"", `line 2: admission.shutdown_grace: "ten" is not a duration`},
		{"[socket]\nmode = 0o660", `line 2: socket.mode: must be a string, got an integer (432); write it quoted, e.g. "0660"`},
		{"[socket]\ngroup = 1001", `line 2: socket.group: must be a string, got an integer (1001); write it quoted`},
		{"[socket]\npath = 1979-05-27", "line 2: socket.path: must be a string, got a date or time"},
		{"[peers]\nuids = [-1]", "line 2: peers.uids: element 0: -1 is out of range (0 to 4294967295)"},
		{"[peers]\nuids = [0, 4294967296]", "line 2: peers.uids: element 1: 4294967296 is out of range"},
		{"[peers]\ngids = 5", "line 2: peers.gids: must be an array, got an integer (5)"},
		{"[jail]\nuid_base = -3", "line 2: jail.uid_base: -3 is out of range"},
		{"[jail]\nread_only_mounts = [\"/a\", 3]", "line 2: jail.read_only_mounts: element 1: must be a string, got an integer (3)"},
		{"[limits.default]\ncpus = \"one\"", `line 2: limits.default.cpus: must be a number, got a string ("one")`},
		{"admission = 3", "line 1: admission: must be a table ([admission]), got an integer (3)"},
		{"[limits]\ndefault = []", "line 2: limits.default: must be a table ([limits.default]), got an array"},
		{"[admission]\nmax_concurrent = 99999999999999999999", "line 2: "},
		// values
		{"[socket]\npath = \"run/x.sock\"", `line 2: socket.path: "run/x.sock" must be a clean absolute path`},
		{"[socket]\npath = \"/run//x.sock\"", `line 2: socket.path: "/run//x.sock" must be a clean absolute path`},
		{"[socket]\npath = \"/" + strings.Repeat("x", 95) + "\"", "line 2: socket.path: is 96 bytes long; at most 95 (a Unix socket path holds 107, and the daemon binds a temporary name up to 12 bytes longer first)"},
		{"[socket]\ngroup = \"a:b\"", `line 2: socket.group: "a:b" is neither a group name nor a gid`},
		{"[socket]\ngroup = \"4294967295\"", "line 2: socket.group: gid 4294967295 is out of range"},
		{"[socket]\nmode = \"0778\"", `line 2: socket.mode: "0778" is not an octal mode between 0 and 0777`},
		{"[socket]\nmode = \"01777\"", `line 2: socket.mode: "01777" is not an octal mode`},
		{"[socket]\nmode = \"rw\"", `line 2: socket.mode: "rw" is not an octal mode`},
		{"[socket]\nmode = \"\"", `line 2: socket.mode: "" is not an octal mode`},
		{"[peers]\nuids = []", "line 1: peers: uids and gids are both empty: no client could ever be served"},
		{"[peers]\nuids = [2000000005]", "line 2: peers.uids: 2000000005 is inside the jails' uid range"},
		{"[peers]\ngids = [2000000000]", "line 2: peers.gids: 2000000000 is inside the jails' uid range"},
		{"[admission]\nmax_concurrent = 0", "line 2: admission.max_concurrent: must be at least 1, got 0"},
		{"[admission]\nqueue_length = -1", "line 2: admission.queue_length: must be at least 0, got -1"},
		{"[admission]\nmax_request_bytes = 1048575", "line 2: admission.max_request_bytes: must be at least 1 MiB (1048576), got 1048575"},
		{"[admission]\nmax_queued_bytes = 1048576", "line 2: admission.max_queued_bytes: 1048576 is below admission.max_request_bytes (134217728)"},
		{"[admission]\nshutdown_grace = \"-1s\"", "line 2: admission.shutdown_grace: must not be negative, got -1s"},
		{"[limits.default]\nmemory_bytes = 1000", "line 2: limits.default.memory_bytes: must be at least 16 MiB"},
		{"[limits.max]\nmemory_bytes = -1", "line 2: limits.max.memory_bytes: must be at least 16 MiB"},
		{"[limits.default]\nwall_time_ms = -5", "line 2: limits.default.wall_time_ms: must be at least 1 ms"},
		{"[limits.max]\ncpu_time_ms = 9223372036855", "line 2: limits.max.cpu_time_ms: 9223372036855 is out of range"},
		{"[limits.default]\npids = -1", "line 2: limits.default.pids: must be at least 1"},
		{"[limits.default]\noutput_bytes = -1", "line 2: limits.default.output_bytes: must be at least 1"},
		{"[limits.max]\ntmp_bytes = 100", "line 2: limits.max.tmp_bytes: must be at least 4096"},
		{"[limits.default]\nopen_files = 3", "line 2: limits.default.open_files: must be at least 16"},
		{"[limits.max]\nfile_size_bytes = -1", "line 2: limits.max.file_size_bytes: must be at least 1"},
		{"[limits.default]\ncpus = -1", "line 2: limits.default.cpus: must be above 0 and at most 1024"},
		{"[limits.max]\ncpus = nan", "line 2: limits.max.cpus: must be above 0 and at most 1024"},
		{"[limits.default]\nmemory_bytes = 8589934592", "line 2: limits.default.memory_bytes: 8589934592 is above limits.max.memory_bytes (4294967296)"},
		{"[limits.max]\npids = 10", "limits.default.pids: 64 is above limits.max.pids (10)"},
		{"[limits.default]\ncpus = 2.5\n[limits.max]\ncpus = 2", "line 2: limits.default.cpus: 2.5 is above limits.max.cpus (2)"},
		{"[jail]\npython = \"python3\"", `line 2: jail.python: "python3" must be a clean absolute path`},
		{"[jail]\nread_only_mounts = [\"/opt/venv\", \"/\"]", `line 2: jail.read_only_mounts[1]: "/" must be a clean absolute path other than /`},
		{"[jail]\nread_only_mounts = [\"opt\"]", `line 2: jail.read_only_mounts[0]: "opt" must be a clean absolute path`},
		{"[jail]\nread_only_mounts = [\"/opt/../etc\"]", `line 2: jail.read_only_mounts[0]: "/opt/../etc" must be a clean absolute path`},
		{"[jail]\nuid_base = 0", "line 2: jail.uid_base: must be at least 65536"},
		{"[jail]\nuid_base = 1000", "line 2: jail.uid_base: must be at least 65536"},
		{"[jail]\nuid_count = 0", "line 2: jail.uid_count: must be at least 1"},
		{"[jail]\nuid_base = 4294967000\nuid_count = 295", ""}, // the last uid is 2^32-2: fine
		{"[jail]\nuid_base = 4294967000\nuid_count = 296", "line 3: jail.uid_count: uid_base 4294967000 + uid_count 296 passes the largest uid 4294967294"},
		{"[admission]\nmax_concurrent = 8\nmax_sessions = 0\n[jail]\nuid_count = 4", "line 5: jail.uid_count: 4 is below the 17 uids jails may hold at once: admission.max_concurrent (8) + jail.prepared_jails (0) + admission.max_sessions (0), and per environment (1) a zygote and jail.warm_ahead (8)"},
		{"[admission]\nmax_concurrent = 8\nmax_sessions = 0\n[jail]\nuid_count = 9\nwarm_ahead = 0", ""},
		{"[admission]\nmax_concurrent = 8\nmax_sessions = 0\n[jail]\nuid_count = 16\nstart = \"cold\"\nwarm_ahead = 0", "line 5: jail.uid_count: 16 is below the 17 uids"},
		{"[admission]\nmax_concurrent = 8\nmax_sessions = 3\n[jail]\nuid_count = 11\nwarm_ahead = 0", "line 5: jail.uid_count: 11 is below the 12 uids"},
		{"[admission]\nmax_sessions = -1", "line 2: admission.max_sessions: must be from 0 (no sessions) to 4096, got -1"},
		{"[admission]\nmax_sessions = 4097", "line 2: admission.max_sessions: must be from 0 (no sessions) to 4096, got 4097"},
		{"[sessions]\nidle_timeout = \"500ms\"", "line 2: sessions.idle_timeout: must be at least 1s, got 500ms"},
		{"[sessions]\nidle_timeout = \"2h\"", "sessions.max_idle_timeout: 1h0m0s is below sessions.idle_timeout (2h0m0s)"},
		{"[sessions]\nmax_lifetime = \"0s\"", "line 2: sessions.max_lifetime: must be at least 1s, got 0s"},
		{"[jail]\nstart = \"hot\"", `line 2: jail.start: must be "warm" or "cold", got "hot"`},
		{"[jail]\nwarm_ahead = -1", "line 2: jail.warm_ahead: must be from 0 (none) to 1024, got -1"},
		{"[jail]\nzygote_max_forks = 0", "line 2: jail.zygote_max_forks: must be at least 1, got 0"},
		{"[jail]\nzygote_memory_bytes = 1000", "line 2: jail.zygote_memory_bytes: must be at least 64 MiB"},
		{"[jail]\nprepared_jails = -1", "line 2: jail.prepared_jails: must be from 0 (off) to 1024, got -1"},
		{"[jail]\nprepared_jails = 1025", "line 2: jail.prepared_jails: must be from 0 (off) to 1024, got 1025"},
		{"[jail]\non_forbidden_syscall = \"trap\"", `line 2: jail.on_forbidden_syscall: must be "errno" or "kill", got "trap"`},
		{"[jail]\nscratch_noexec = \"yes\"", `line 2: jail.scratch_noexec: must be true or false, got`},
		{"[jail]\nscratch_noexec = true", ""},
		{"[collect]\nfile_bytes = 0", "line 2: collect.file_bytes: must be at least 1, got 0"},
		{"[collect]\ntotal_bytes = 0", "line 2: collect.total_bytes: must be at least 1, got 0"},
		{"[collect]\nfile_bytes = 2000\ntotal_bytes = 1000", "line 2: collect.file_bytes: 2000 is above collect.total_bytes (1000)"},
		{"[collect]\nfiles = -1", "line 2: collect.files: must be at least 0, got -1"},
		{"[log]\nlevel = \"loud\"", `line 2: log.level: must be debug, info, warn or error, got "loud"`},
		{"[log]\nlevel = \"INFO\"", `line 2: log.level: must be debug, info, warn or error, got "INFO"`},
		{"[log]\nformat = \"xml\"", `line 2: log.format: must be "text" or "json", got "xml"`},
	}
	for _, tc := range cases {
		_, err := parseConfig([]byte(tc.doc))
		if tc.want == "" {
			assert.NoError(t, err, tc.doc)
			continue
		}
		if assert.Error(t, err, tc.doc) {
			assert.Contains(t, err.Error(), tc.want, tc.doc)
			var ce *ConfigError
			assert.True(t, errors.As(err, &ce), "%q: %T", tc.doc, err)
		}
	}
}

func TestUnknownKey(t *testing.T) {
	cases := []struct{ doc, want string }{
		{"[admission]\nmax_concurent = 3", `line 2: unknown key "admission.max_concurent" (did you mean "admission.max_concurrent"?)`},
		{"[limit.default]\npids = 3", `line 1: unknown key "limit" (did you mean "limits"?)`},
		{"[limits.default]\nmemory = 3", `line 2: unknown key "limits.default.memory"`},
		{"\n\nverbose = true", `line 3: unknown key "verbose"`},
		{"log = { level = \"info\", colour = true }", `line 1: unknown key "log.colour"`},
		{"[jail.extra]\nx = 1", `line 1: unknown key "jail.extra"`},
	}
	for _, tc := range cases {
		_, err := parseConfig([]byte(tc.doc))
		require.Error(t, err, tc.doc)
		assert.Equal(t, tc.want, err.Error(), tc.doc)
		var ce *ConfigError
		require.True(t, errors.As(err, &ce))
		assert.True(t, ce.Unknown)
	}
}

func TestSyntaxErrors(t *testing.T) {
	for doc, want := range map[string]string{
		"[socket]\npath = \"/x\nmode = \"0600\"":     "line 2: ",
		"[admission\n":                               "line 1: ",
		"[log]\nlevel = info":                        "line 2: ",
		"[log]\nlevel = \"info\"\nlevel = \"debug\"": `line 3: log.level: is set twice (first on line 2)`,
		"[log]\n[log]":                               "line 2: log: table [log] is given twice (first on line 1)",
	} {
		_, err := parseConfig([]byte(doc))
		if assert.Error(t, err, doc) {
			assert.Contains(t, err.Error(), want, doc)
		}
	}
}

// All problems come at once, in the file's order.
func TestManyErrorsAtOnce(t *testing.T) {
	_, err := parseConfig([]byte("[log]\nlevel = \"loud\"\n[admission]\nqueue_length = -1\nmax_concurrent = 0\n"))
	require.Error(t, err)
	assert.Equal(t, "line 2: log.level: must be debug, info, warn or error, got \"loud\"\n"+
		"line 4: admission.queue_length: must be at least 0, got -1\n"+
		"line 5: admission.max_concurrent: must be at least 1, got 0", err.Error())

	_, err = parseConfig([]byte("[log]\nlevl = 1\n[admission]\nqueue_length = \"x\"\n"))
	require.Error(t, err)
	assert.Equal(t, "line 2: unknown key \"log.levl\" (did you mean \"log.level\"?)\n"+
		"line 4: admission.queue_length: must be an integer, got a string (\"x\")", err.Error())
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()

	missing := filepath.Join(dir, "none.toml")
	_, err := LoadConfig(missing)
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.Equal(t, "config "+missing+": no such file or directory", err.Error())

	p := filepath.Join(dir, "config.toml")
	require.NoError(t, os.WriteFile(p, []byte("[log]\nlevel = \"debug\"\n"), 0o644))
	c, err := LoadConfig(p)
	require.NoError(t, err)
	assert.Equal(t, "debug", c.Log.Level)

	require.NoError(t, os.WriteFile(p, []byte("[limits.default]\nmemory_bytes = 1000\n\n[admission]\nmax_concurent = 1\n"), 0o644))
	_, err = LoadConfig(p)
	require.Error(t, err)
	assert.Equal(t, "config "+p+": line 5: unknown key \"admission.max_concurent\" (did you mean \"admission.max_concurrent\"?)", err.Error())

	require.NoError(t, os.WriteFile(p, []byte("[limits.default]\nmemory_bytes = 1000\n"), 0o644))
	_, err = LoadConfig(p)
	require.Error(t, err)
	assert.Equal(t, "config "+p+": line 2: limits.default.memory_bytes: must be at least 16 MiB (python3 needs about 10 MiB to start), got 1000 bytes", err.Error())
	var ce *ConfigError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "limits.default.memory_bytes", ce.Key)
	assert.Equal(t, 2, ce.Line)

	// A file anyone may write decides nothing.
	require.NoError(t, os.WriteFile(p, nil, 0o644))
	require.NoError(t, os.Chmod(p, 0o666))
	_, err = LoadConfig(p)
	assert.EqualError(t, err, "config "+p+": is writable by every user (mode 0666); refusing it")

	// Nor one that another user owns (and so may rewrite).
	if os.Geteuid() == 0 {
		require.NoError(t, os.Chmod(p, 0o644))
		require.NoError(t, os.Chown(p, 65534, 65534))
		_, err = LoadConfig(p)
		assert.EqualError(t, err, "config "+p+": is owned by uid 65534, not by root or the daemon's user; refusing it")

		// Nor one that another group may write; root's group may.
		require.NoError(t, os.Chown(p, 0, 65534))
		require.NoError(t, os.Chmod(p, 0o664))
		_, err = LoadConfig(p)
		assert.EqualError(t, err, "config "+p+": is writable by group 65534 (mode 0664); refusing it: chmod g-w, or chgrp to root")
		require.NoError(t, os.Chown(p, 0, 0))
		_, err = LoadConfig(p)
		assert.NoError(t, err)

		// Nor one whose ACL lets another user write (the mode's group
		// bits are then the ACL's mask): user 65534 rw.
		acl := binary.LittleEndian.AppendUint32(nil, 2) // POSIX_ACL_XATTR_VERSION
		for _, e := range []struct {
			tag, perm uint16
			id        uint32
		}{{0x01, 6, ^uint32(0)}, {0x02, 6, 65534}, {0x04, 4, ^uint32(0)}, {0x10, 6, ^uint32(0)}, {0x20, 4, ^uint32(0)}} {
			acl = binary.LittleEndian.AppendUint16(acl, e.tag)
			acl = binary.LittleEndian.AppendUint16(acl, e.perm)
			acl = binary.LittleEndian.AppendUint32(acl, e.id)
		}
		if err := unix.Setxattr(p, "system.posix_acl_access", acl, 0); err != nil {
			t.Logf("no ACL check: %s's file system takes no ACL: %v", p, err)
		} else {
			_, err = LoadConfig(p)
			assert.EqualError(t, err, "config "+p+": has an access ACL that may let other users write it (mode 0664); refusing it: setfacl -b, or chmod g-w")
			require.NoError(t, os.Chmod(p, 0o644)) // the mask: no write for any entry
			_, err = LoadConfig(p)
			assert.NoError(t, err)
		}
	}

	_, err = LoadConfig(dir)
	assert.ErrorContains(t, err, "config "+dir+": ")
}

func TestSocketGID(t *testing.T) {
	c := DefaultConfig()
	c.Socket.Group = "1234"
	gid, err := c.SocketGID()
	require.NoError(t, err)
	assert.Equal(t, 1234, gid)

	c.Socket.Group = "root" // in every /etc/group
	gid, err = c.SocketGID()
	require.NoError(t, err)
	assert.Equal(t, 0, gid)

	c.Socket.Group = "no-such-group-agentjail"
	_, err = c.SocketGID()
	assert.EqualError(t, err, `socket.group: no group named "no-such-group-agentjail" on this host`)
}

func TestConfigDurationText(t *testing.T) {
	var d ConfigDuration
	require.NoError(t, d.UnmarshalText([]byte("1m30s")))
	assert.Equal(t, 90*time.Second, time.Duration(d))
	b, err := d.MarshalText()
	require.NoError(t, err)
	assert.Equal(t, "1m30s", string(b))
	assert.Error(t, d.UnmarshalText([]byte("10")))
}

// scripts/packaging/config.toml is what the install script puts in place: it must
// parse to exactly the defaults, and show every key. The one exception is
// max_concurrent, whose default (the number of CPUs) a file cannot hold,
// and prepared_jails, which follows it: they are there commented out.
func TestShippedConfigIsTheDefault(t *testing.T) {
	b, err := os.ReadFile("../scripts/packaging/config.toml")
	require.NoError(t, err)
	c, err := parseConfig(b)
	require.NoError(t, err)
	assert.Equal(t, DefaultConfig(), c)

	text := string(b)
	commented := map[string]bool{"admission.max_concurrent": true, "jail.prepared_jails": true, "jail.warm_ahead": true,
		"jail.python": true, "jail.read_only_mounts": true, // the older spelling of [environments.default]
		"network.policies.NAME.allow": true} // a policy's example: the default has none
	section := ""
	set := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") || strings.HasPrefix(line, "# [") {
			section = strings.Trim(strings.TrimPrefix(line, "# "), "[]") + "."
			if strings.HasPrefix(section, "environments.") {
				section = "environments.NAME."
			}
			continue
		}
		if k, _, ok := strings.Cut(line, " = "); ok {
			set[section+strings.TrimPrefix(k, "# ")] = !strings.HasPrefix(k, "#")
		}
	}
	for _, k := range configKeys(reflect.TypeFor[Config](), "") {
		active, present := set[k]
		assert.True(t, present, "scripts/packaging/config.toml lacks %s", k)
		assert.Equal(t, !commented[k], active, "%s: commented out?", k)
	}
}

// The README documents every key, in its Configuration table.
func TestReadmeDocumentsEveryKey(t *testing.T) {
	b, err := os.ReadFile("../docs/operations.md")
	require.NoError(t, err)
	_, sec, ok := strings.Cut(string(b), "\n## Configuration\n")
	require.True(t, ok, "docs/operations.md has no \"## Configuration\" section")
	sec, _, _ = strings.Cut(sec, "\n## ")
	for _, k := range configKeys(reflect.TypeFor[Config](), "") {
		assert.Contains(t, sec, "| `"+k+"` |", "README's Configuration table lacks %s", k)
	}
}

// prepared_jails follows max_concurrent unless it is set.
func TestPreparedJailsFollowMaxConcurrent(t *testing.T) {
	c, err := parseConfig([]byte("[admission]\nmax_concurrent = 3\n[jail]\nstart = \"cold\"\n"))
	require.NoError(t, err)
	assert.Equal(t, 3, c.Prepared())
	assert.Equal(t, 3, c.WarmAhead())
	c, err = parseConfig([]byte("[admission]\nmax_concurrent = 3\n[jail]\nstart = \"cold\"\nprepared_jails = 0\n"))
	require.NoError(t, err)
	assert.Equal(t, 0, c.Prepared())
	// Warm by default: runs are forked ahead instead.
	c, err = parseConfig([]byte("[admission]\nmax_concurrent = 3\n"))
	require.NoError(t, err)
	assert.Equal(t, 0, c.Prepared())
	assert.Equal(t, 3, c.WarmAhead())
	// The default is bounded as a set value is.
	c, err = parseConfig([]byte("[admission]\nmax_concurrent = 5000\n[jail]\nuid_count = 10000\nstart = \"cold\"\nwarm_ahead = 0\n"))
	require.NoError(t, err)
	assert.Equal(t, 1024, c.Prepared())
	assert.Equal(t, 0, c.WarmAhead())
}

func ptr[T any](v T) *T { return &v }
