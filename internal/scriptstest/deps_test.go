package scriptstest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func depsList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("scripts/deps", append([]string{"--list"}, args...)...)
	cmd.Dir = repo(t)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// The quick start installs what running agentjail needs, and nothing of
// the developer's tools; the test command installs those.
func TestDepsRuntimeAndTestSets(t *testing.T) {
	run := depsList(t)
	assert.ElementsMatch(t, []string{"gcc", "libc6-dev", "musl-tools", "python3", "ca-certificates", "netbase", "media-types"}, run)
	test := depsList(t, "--test")
	for _, p := range []string{"systemd", "strace", "git", "libseccomp-dev", "nodejs", "libpython3.11-testsuite", "python3-pip", "python3-requests", "staticcheck (Go module)"} {
		assert.NotContains(t, run, p, "the runtime set")
		assert.Contains(t, test, p, "the test set")
	}
	assert.Subset(t, test, run)
	assert.Subset(t, depsList(t, "--test", "--scientific"), []string{"python3-numpy", "staticcheck (Go module)"})

	for _, f := range []struct{ script, want string }{
		{"quickstart", "scripts/deps ${1:+\"$1\"}\n"},
		{"test", "scripts/deps --test --scientific\n"},
	} {
		b, err := os.ReadFile(filepath.Join(repo(t), "scripts", f.script))
		require.NoError(t, err)
		assert.Contains(t, string(b), f.want, "scripts/%s", f.script)
	}
}
