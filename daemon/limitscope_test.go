package daemon

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The limits table's scope column is what a session and a call take.
func TestLimitScopes(t *testing.T) {
	assert.Equal(t, []string{"memory_bytes", "cpu_time_ms", "pids", "tmp_bytes", "open_files", "file_size_bytes"}, LimitKeys(ScopeSession))
	assert.Equal(t, []string{"wall_time_ms", "cpu_time_ms", "output_bytes", "display_bytes"}, LimitKeys(ScopeCall))
	assert.Len(t, LimitKeys(ScopeRun), len(requestFields), "a run takes every limit a request has")
}

// A request that sets several limits of the wrong scope is told of the
// first in the table's order, every time (not of one picked at random).
func TestLimitOfTheWrongScopeIsNamedInTableOrder(t *testing.T) {
	v := int64(1)
	call := &RequestLimits{WallTimeMs: &v, OutputBytes: &v, DisplayBytes: &v}
	sess := &RequestLimits{MemoryBytes: &v, Pids: &v, TmpBytes: &v, OpenFiles: &v, FileSizeBytes: &v}
	for range 50 {
		err := call.only(ScopeSession, "a limit of each call")
		require.Error(t, err)
		assert.Equal(t, "limits.wall_time_ms: a limit of each call; a session has memory_bytes, cpu_time_ms, pids, tmp_bytes, open_files and file_size_bytes", err.Error())
		err = sess.only(ScopeCall, "a limit of the whole session")
		require.Error(t, err)
		assert.Equal(t, "limits.memory_bytes: a limit of the whole session; a call has wall_time_ms, cpu_time_ms, output_bytes and display_bytes", err.Error())
	}
	assert.NoError(t, sess.only(ScopeSession, "x"))
	assert.NoError(t, call.only(ScopeCall, "x"))
	assert.NoError(t, (*RequestLimits)(nil).only(ScopeCall, "x"))
}
