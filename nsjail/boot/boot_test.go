//go:build linux && cgo

package boot

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/nsjail/internal/wire"
)

func TestBootstrapActsOnInitArg0(t *testing.T) {
	assert.Equal(t, wire.InitArg0, Arg0)
	assert.Equal(t, wire.BootLinked, wire.Boot)
}

// The init stage's writer of /etc, /code and /workspace (init_fs_linux.c)
// resolves every path beneath its directory: the paths Validate lets
// through work, and none that leaves the directory does, even if one got
// past Validate.
func TestWriteBeneathStaysBeneath(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	require.NoError(t, WriteBeneath(dir, "a/b/c.txt", []byte("c"), 0o644))
	require.NoError(t, WriteBeneath(dir, "top", []byte("t"), 0o644))
	b, err := os.ReadFile(filepath.Join(dir, "a/b/c.txt"))
	require.NoError(t, err)
	assert.Equal(t, "c", string(b))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link")))
	require.NoError(t, os.Symlink(outside+"/f", filepath.Join(dir, "dangling")))
	require.NoError(t, os.Symlink("a", filepath.Join(dir, "in"))) // inside, but a link all the same
	for _, p := range []string{"../escape", "a/../../escape", "link/escape", outside + "/escape", "dangling",
		// a missing directory on the way: the directories are made beneath too
		"n/../../escape/x", "m/../link/x/y", "in/x"} {
		assert.Error(t, WriteBeneath(dir, p, []byte("x"), 0o644), p)
	}
	ents, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, ents, "a write left the directory")
	_, err = os.Stat(filepath.Join(filepath.Dir(dir), "escape"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
