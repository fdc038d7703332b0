package daemon

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What a session can hold (docs/security.md): memory a session's code
// can keep across calls counts against the session's own limit, never
// against the daemon's cgroup. The attacks keep a call's stdin (a dup of
// fd 0, a shared mapping of it) and the session's files; the session's
// memory in use must show them.

func sessionMemory(t *testing.T, c *http.Client, id string) int64 {
	t.Helper()
	code, b := do(t, c, http.MethodGet, "/v1/sessions/"+id, nil)
	require.Equal(t, http.StatusOK, code, string(b))
	var info SessionInfo
	require.NoError(t, json.Unmarshal(b, &info))
	require.NotNil(t, info.MemoryBytes)
	return *info.MemoryBytes
}

func TestSessionHoardedStdinCountsAgainstIt(t *testing.T) {
	s, _, c := sessionServer(t, bigBodies)
	sc := startSession(t, s, c, map[string]any{"limits": map[string]any{"memory_bytes": 256 << 20}})
	const calls, size = 4, 8 << 20
	stdin := strings.Repeat("x", size)
	hoard := "import mmap, os\nkeep = globals().setdefault('keep', [])\nkeep.append(os.dup(0))\n" +
		"keep.append(mmap.mmap(os.dup(0), 0, mmap.MAP_SHARED, mmap.PROT_READ))\n"
	for range calls {
		a := sessionRun(t, c, sc.ID, map[string]any{"code": hoard, "stdin": stdin})
		require.Equal(t, "ok", a.Status, a.Stderr)
	}
	// Before: the memfds were the daemon's, 2-5 MiB showed here.
	assert.GreaterOrEqual(t, sessionMemory(t, c, sc.ID), int64(calls*size), "the stdin the session keeps is its memory")
}

func TestSessionFilesCountAgainstIt(t *testing.T) {
	s, _, c := sessionServer(t, bigBodies)
	const size = 24 << 20
	sc := startSession(t, s, c, map[string]any{"limits": map[string]any{"memory_bytes": 256 << 20, "tmp_bytes": 64 << 20},
		"files": []map[string]string{{"path": "data/big.txt", "content": strings.Repeat("y", size)}}})
	assert.GreaterOrEqual(t, sessionMemory(t, c, sc.ID), int64(size), "the session's files are its memory")
	a := sessionRun(t, c, sc.ID, map[string]any{"code": "len(open('data/big.txt').read())"})
	assert.Equal(t, "25165824", val(a))
	assert.Equal(t, 1, a.Session.Calls, "the call that wrote the files is not the session's")

	// Files that do not fit the session's memory: a 400 that says so.
	code, b := do(t, c, http.MethodPost, "/v1/sessions", map[string]any{"limits": map[string]any{"memory_bytes": 32 << 20, "tmp_bytes": 64 << 20},
		"files": []map[string]string{{"path": "a.txt", "content": strings.Repeat("z", 40<<20)}}})
	assert.Equal(t, http.StatusBadRequest, code, string(b))
	assert.Contains(t, string(b), "limits.memory_bytes")

	// The session's own rlimits hold for them, as for a call's files.
	code, b = do(t, c, http.MethodPost, "/v1/sessions", map[string]any{"limits": map[string]any{"file_size_bytes": 1 << 20},
		"files": []map[string]string{{"path": "a.txt", "content": strings.Repeat("z", 2<<20)}}})
	assert.Equal(t, http.StatusBadRequest, code, string(b))
	assert.Contains(t, string(b), "files[0].path")
	assert.Contains(t, string(b), "limits.file_size_bytes")
}

// A call's files are streamed to /workspace: a session holds one message
// of them at a time, not the call's payload several times over.
func TestSessionCallFileIsStreamed(t *testing.T) {
	s, _, c := sessionServer(t, bigBodies)
	sc := startSession(t, s, c, map[string]any{"limits": map[string]any{"memory_bytes": 32 << 20, "tmp_bytes": 16 << 20}})
	const size = 8 << 20
	a := sessionRun(t, c, sc.ID, map[string]any{"code": "import os\nos.path.getsize('in.bin')",
		"files": []map[string]string{{"path": "in.bin", "content": strings.Repeat("q", size)}}})
	assert.Equal(t, "ok", a.Status, "%s %s", a.KillReason, a.Stderr)
	assert.Equal(t, "8388608", val(a))
	assert.True(t, a.Session.Alive)
}

func bigBodies(o *Options) { o.MaxRequestBytes, o.MaxQueuedBytes = 128<<20, 256<<20 }
