package nsjail

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLimitsValidate(t *testing.T) {
	require.NoError(t, DefaultLimits().Validate())
	for field, mod := range map[string]func(*Limits){
		"limits.memory_bytes":    func(l *Limits) { l.MemoryBytes = 1 << 20 },
		"limits.wall_time_ms":    func(l *Limits) { l.WallTime = 0 },
		"limits.cpu_time_ms":     func(l *Limits) { l.CPUTime = -1 },
		"limits.pids":            func(l *Limits) { l.Pids = 0 },
		"limits.output_bytes":    func(l *Limits) { l.OutputBytes = -5 },
		"limits.tmp_bytes":       func(l *Limits) { l.TmpBytes = 0 },
		"limits.open_files":      func(l *Limits) { l.OpenFiles = 3 },
		"limits.file_size_bytes": func(l *Limits) { l.FileSizeBytes = 0 },
		"limits.cpus":            func(l *Limits) { l.CPUs = 0 },
	} {
		l := DefaultLimits()
		mod(&l)
		err := l.Validate()
		var fe *FieldError
		require.ErrorAs(t, err, &fe, field)
		assert.Equal(t, field, fe.Field)
	}
}

func TestCleanRelPath(t *testing.T) {
	for in, want := range map[string]string{"a.txt": "a.txt", "data/in.csv": "data/in.csv", "./x//y": "x/y"} {
		got, err := CleanRelPath(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got)
	}
	for _, bad := range []string{"", "/etc/passwd", "../x", "a/../../x", "a/..", ".", "a\x00b"} {
		_, err := CleanRelPath(bad)
		assert.Error(t, err, "%q", bad)
	}
}

// Each refusal names the field and says what to fix: the daemon returns
// the FieldError's text to the client as it is.
func TestSpecValidate(t *testing.T) {
	ok := Spec{Program: []byte("pass"), Limits: DefaultLimits()}
	require.NoError(t, ok.Validate())
	for name, c := range map[string]struct {
		mod  func(*Spec)
		want string // in the error's text
	}{
		"dotdot file": {func(s *Spec) { s.Files = []File{{Path: "../x"}} }, `files[0].path: path "../x" must not have a ".." element`},
		"abs file":    {func(s *Spec) { s.Files = []File{{Path: "/etc/x"}} }, `files[0].path: path "/etc/x" must be relative to /workspace`},
		"dup file":    {func(s *Spec) { s.Files = []File{{Path: "a"}, {Path: "./a"}} }, `files[1].path: "./a" is given twice`},
		// A file and a directory of the same name could not both be
		// written: a 400 naming the field, not a set-up failure (500).
		"file then dir": {func(s *Spec) { s.Files = []File{{Path: "a"}, {Path: "a/b"}} }, `files[1].path: "a/b" needs "a" to be a directory, but files[0] is a file of that name`},
		"dir then file": {func(s *Spec) { s.Files = []File{{Path: "a/b/c"}, {Path: "a/b"}} }, `files[1].path: "a/b" is a file here, and a directory of another file's path (files[0])`},
		"trailing /":    {func(s *Spec) { s.Files = []File{{Path: "out/"}} }, `files[0].path: "out/" ends in /`},
		"env name":      {func(s *Spec) { s.Env = map[string]string{"A=B": "1"} }, `env: "A=B" is not a valid variable name`},
		"env reserved":  {func(s *Spec) { s.Env = map[string]string{"HOME": "/"} }, "env: HOME is set by the jail and cannot be overridden"},
		"env nul":       {func(s *Spec) { s.Env = map[string]string{"A": "x\x00"} }, "env: value of A contains a NUL byte"},
		"mount":         {func(s *Spec) { s.ReadOnlyMounts = []string{"rel"} }, `read_only_mounts[0]: "rel" must be a clean absolute path other than /`},
		"program name":  {func(s *Spec) { s.ProgramName = "../x.py" }, `program name: "../x.py" must be a plain file name`},
		"files too big": {func(s *Spec) { s.Limits.TmpBytes = 4096; s.Files = []File{{Path: "a", Content: make([]byte, 8192)}} },
			"files: total size 8192 bytes is above the limit"},
		"too many files": {func(s *Spec) {
			for i := range MaxFiles + 1 {
				s.Files = append(s.Files, File{Path: fmt.Sprint(i)})
			}
		}, fmt.Sprintf("files: %d files, at most %d", MaxFiles+1, MaxFiles)},
		"too many files and directories": {func(s *Spec) {
			for i := range MaxFiles/2 + 1 {
				s.Files = append(s.Files, File{Path: fmt.Sprint("d", i, "/f")})
			}
		}, fmt.Sprintf("files: %d files and the %d directories of their paths so far, more than the %d that fit together", MaxFiles/2+1, MaxFiles/2+1, MaxFiles)},
		"too many code files": {func(s *Spec) {
			for i := range MaxCodeFiles + 1 {
				s.CodeFiles = append(s.CodeFiles, File{Path: fmt.Sprint(i, ".py")})
			}
		}, fmt.Sprintf("code files: %d files, at most %d", MaxCodeFiles+1, MaxCodeFiles)},
		"env too big": {func(s *Spec) {
			s.Env = map[string]string{}
			for i := range MaxEnvBytes / maxEnvVarBytes * 2 {
				s.Env[fmt.Sprint("A", i)] = strings.Repeat("x", maxEnvVarBytes-8)
			}
		}, fmt.Sprintf("bytes or more of variables, at most %d", MaxEnvBytes)}, // the count before it depends on the map's order
		"env variable too big": {func(s *Spec) { s.Env = map[string]string{"A": strings.Repeat("x", maxEnvVarBytes-1)} },
			fmt.Sprintf("env: A is %d bytes with its value, at most %d", maxEnvVarBytes+1, maxEnvVarBytes)},
		"name too long": {func(s *Spec) { s.Files = []File{{Path: "d/" + strings.Repeat("n", 256)}} }, "files[0].path: a name of 256 bytes, at most 255"},
		"path too long": {func(s *Spec) { s.Files = []File{{Path: strings.Repeat("a/", 2048) + "b"}} }, "files[0].path: 4097 bytes long, at most 4095"},
		"code too big": {func(s *Spec) {
			s.Program = make([]byte, MaxCodeBytes/2)
			s.CodeFiles = []File{{Path: "m.py", Content: make([]byte, MaxCodeBytes/2+1)}}
		}, fmt.Sprintf("program: the program and its code files are %d bytes together, above the limit (%d bytes)", MaxCodeBytes+1, MaxCodeBytes)},
	} {
		s := ok
		c.mod(&s)
		err := s.Validate()
		var fe *FieldError
		if assert.ErrorAs(t, err, &fe, name) {
			assert.Contains(t, err.Error(), c.want, name)
		}
	}
}

func TestDecide(t *testing.T) {
	exited := func(code int) syscall.WaitStatus { return syscall.WaitStatus(code << 8) }
	signaled := func(sig syscall.Signal) syscall.WaitStatus { return syscall.WaitStatus(sig) }
	for _, c := range []struct {
		name     string
		ws       syscall.WaitStatus
		recorded KillReason
		oom      int64
		status   Status
		reason   KillReason
		exit     int
	}{
		{"ok", exited(0), "", 0, StatusOK, "", 0},
		{"error", exited(1), "", 0, StatusError, "", 1},
		// A program that exits 137 by itself is not a kill (docs/security.md S05).
		{"exit 137", exited(137), "", 0, StatusError, "", 137},
		// It exited before our kill landed: it ended by itself.
		{"exit beats timer", exited(0), KillWallTimeout, 0, StatusOK, "", 0},
		{"wall", signaled(syscall.SIGKILL), KillWallTimeout, 0, StatusKilled, KillWallTimeout, 137},
		// The first recorded evidence wins over a later OOM count.
		{"wall then oom", signaled(syscall.SIGKILL), KillWallTimeout, 1, StatusKilled, KillWallTimeout, 137},
		{"oom by kernel", signaled(syscall.SIGKILL), "", 1, StatusKilled, KillMemoryLimit, 137},
		// A program that SIGKILLs itself is not a memory kill.
		{"self sigkill", signaled(syscall.SIGKILL), "", 0, StatusSignaled, "", 137},
		{"segv", signaled(syscall.SIGSEGV), "", 0, StatusSignaled, "", 139},
		{"segv during timer", signaled(syscall.SIGSEGV), KillWallTimeout, 0, StatusSignaled, "", 139},
		{"xfsz", signaled(syscall.SIGXFSZ), "", 0, StatusKilled, KillFileSizeLimit, 128 + 25},
		{"xcpu", signaled(syscall.SIGXCPU), "", 0, StatusKilled, KillCPUTimeout, 128 + 24},
	} {
		r := &Result{OOMKills: c.oom}
		r.decide(c.ws, c.recorded)
		assert.Equal(t, c.status, r.Status, c.name)
		assert.Equal(t, c.reason, r.KillReason, c.name)
		assert.Equal(t, c.exit, r.ExitCode, c.name)
	}
}

func TestUIDRange(t *testing.T) {
	r := &UIDRange{Base: 1000000, Size: 3}
	require.NoError(t, r.Validate(0))
	require.Error(t, (&UIDRange{Base: 0, Size: 10}).Validate(5))
	require.Error(t, (&UIDRange{Base: 10, Size: 10}).Validate(15))
	seen := map[uint32]bool{}
	for i := 0; i < 3; i++ {
		u, err := r.Acquire()
		require.NoError(t, err)
		assert.False(t, seen[u])
		assert.GreaterOrEqual(t, u, uint32(1000000))
		seen[u] = true
	}
	_, err := r.Acquire()
	require.Error(t, err, "the range is exhausted")
	for u := range seen {
		r.Release(u)
		got, err := r.Acquire()
		require.NoError(t, err)
		assert.Equal(t, u, got, "the only free one")
	}
}

// Consecutive jails' uids say nothing about how many jails ran between
// them: each is drawn at random (sequential uids, 83db359's, counted the
// runs one by one).
func TestUIDRangeDrawsAtRandom(t *testing.T) {
	r := &UIDRange{Base: DefaultUIDBase, Size: DefaultUIDSize}
	prev, err := r.Acquire()
	require.NoError(t, err)
	r.Release(prev)
	near := 0
	for range 1000 {
		u, err := r.Acquire()
		require.NoError(t, err)
		if d := int64(u) - int64(prev); d >= -100 && d <= 100 {
			near++
		}
		r.Release(u)
		prev = u
	}
	// With 10^6 uids, a draw within 100 of the last one has a chance of
	// 2*10^-4: 1000 draws see none, or one in a rare run.
	assert.LessOrEqual(t, near, 3, "uids follow one another")
}

func TestNewID(t *testing.T) {
	a, b := NewID(), NewID()
	assert.Regexp(t, `^j-[0-9A-HJKMNP-TV-Z]{26}$`, a)
	assert.NotEqual(t, a, b)
}

func TestCapture(t *testing.T) {
	hits := 0
	c := &capture{limit: 10, onLimit: func() { hits++ }}
	c.add(0, []byte("12345"))
	c.add(1, []byte("abc"))
	c.add(0, []byte("6789"))
	c.add(1, []byte("more"))
	assert.Equal(t, "1234567", string(c.buf[0]), "filled up to the limit exactly")
	assert.Equal(t, "abc", string(c.buf[1]))
	assert.True(t, c.truncated[0])
	assert.True(t, c.truncated[1])
	assert.Equal(t, 1, hits)

	c = &capture{limit: 4, onLimit: func() { t.Fatal("exactly the limit is not past it") }}
	c.add(0, []byte("1234"))
	assert.False(t, c.truncated[0])
}

func TestLimitsWithDefaults(t *testing.T) {
	assert.Equal(t, DefaultLimits(), Limits{}.withDefaults())
	l := Limits{MemoryBytes: 64 << 20, WallTime: time.Second, Pids: -1}.withDefaults()
	assert.Equal(t, int64(64<<20), l.MemoryBytes, "a given limit stays")
	assert.Equal(t, time.Second, l.WallTime)
	assert.Equal(t, DefaultLimits().CPUTime, l.CPUTime, "an omitted limit takes its default")
	assert.Equal(t, DefaultLimits().OutputBytes, l.OutputBytes)
	assert.Equal(t, int64(-1), l.Pids, "a negative limit is left for Validate to refuse")
	assert.Error(t, l.Validate())
}

func TestCheckPythonCachesOnlySuccess(t *testing.T) {
	dir := t.TempDir()
	py := dir + "/python3"
	require.Error(t, checkPython(py, []string{dir}))
	require.NoError(t, os.WriteFile(py, []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, checkPython(py, []string{dir}), "a fixed path is accepted: failures are not cached")
	require.Error(t, checkPython(py, []string{"/usr"}), "outside the binds")
	require.Error(t, checkPython("python3", []string{dir}), "relative")
}
