//go:build linux && cgo

package boot

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The digest this binary checks the embedded standalone init against is
// standalone/build's, computed the same way from the C on disk: were
// they to differ, every binary would refuse its own standalone init and
// run jails from itself (slower, and only a warning says so).
func TestSourcesDigestIsBuildInits(t *testing.T) {
	const digest = `sha256sum ./*.c ./*.h standalone/main.c standalone/build | sed 's| \./| |' | sha256sum | cut -d' ' -f1`
	cmd := exec.Command("bash", "-c", digest)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.Output()
	require.NoError(t, err)
	got, err := sourcesDigest()
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSpace(string(out)), got)
	script, err := os.ReadFile(standaloneBuild)
	require.NoError(t, err)
	assert.Contains(t, string(script), digest, "standalone/build's digest is the one this test computes")
}

// A standalone init built from other C is refused, with what to do.
// (The check needs no embedded init: it runs in every build.)
func TestStaleStandaloneInitIsRefused(t *testing.T) {
	got, err := sourcesDigest()
	require.NoError(t, err)
	assert.NoError(t, checkDigest([]byte(got+"\n"), got))
	err = checkDigest([]byte(strings.Repeat("0", 64)+"\n"), got)
	assert.ErrorContains(t, err, "rebuild with scripts/build")
}
