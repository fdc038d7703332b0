package nsjail

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A zygote's pidfd is passed by number to each run's bootstrap: it must
// stay open while a start uses it, even when the zygote's jail is cleaned
// up meanwhile, and close with the last of the two (zygoteNS).
func TestZygoteNSClosesWithItsLastUser(t *testing.T) {
	open := func() (*zygote, *os.File) {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		t.Cleanup(func() { r.Close(); w.Close() })
		return &zygote{nsRef: w}, w
	}
	closed := func(f *os.File) bool { _, err := f.Write([]byte{0}); return err != nil }

	z, f := open()
	require.True(t, z.useNS())
	require.NoError(t, zygoteNS{z}.Close()) // the jail cleaned up during a start
	assert.False(t, closed(f), "a start still uses it")
	assert.False(t, z.useNS(), "no new start after the clean-up")
	z.doneNS()
	assert.True(t, closed(f), "closed with its last user")

	z, f = open()
	require.NoError(t, zygoteNS{z}.Close()) // no start in flight
	assert.True(t, closed(f), "closed with the clean-up")
	require.NoError(t, zygoteNS{z}.Close(), "a second clean-up is nothing")
}
