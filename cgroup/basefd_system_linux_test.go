package cgroup

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A group's directories are made, renamed and removed relative to the
// base directories the Manager opened, not by whole paths walked again on
// every run: with every base moved away from its path after Open, a
// group's whole life still works, in the moved bases.
func TestSystemGroupsMadeRelativeToKeptBases(t *testing.T) {
	m := requireSystem(t, needManager)
	if m.Version() == V2 {
		// The shape of the host: v2 renames no cgroup directory, and
		// moving the base away is how this test shows the property.
		t.Skip("skipping: cgroup v2 cannot rename a cgroup directory")
	}
	require.NotEmpty(t, m.baseDirs)
	for _, b := range m.baseDirs {
		require.NoError(t, os.Rename(b, b+"-moved"))
		t.Cleanup(func() { os.Rename(b+"-moved", b) })
	}
	g, err := m.Create("kept-bases", Resources{MemoryBytes: 64 << 20, Pids: 8})
	require.NoError(t, err)
	require.NoError(t, g.Rename("kept-bases-renamed"))
	name := "kept-bases-renamed"
	for _, b := range m.baseDirs {
		require.DirExists(t, filepath.Join(b+"-moved", name))
	}
	require.NoError(t, g.Delete())
	for _, b := range m.baseDirs {
		require.NoDirExists(t, filepath.Join(b+"-moved", name))
	}
}
