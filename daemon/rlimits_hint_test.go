package daemon

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The warning of shared per-user rlimits says how to lift them both under
// systemd and in a shell (a hand-run `agentjail serve`), for the bounds
// that are shared only; docs/operations.md's log table lists it.
func TestSharedRlimitsFix(t *testing.T) {
	systemd, shell := sharedRlimitsFix([]string{"RLIMIT_NPROC=96364", "RLIMIT_MEMLOCK=8388608"})
	assert.Equal(t, "LimitNPROC=infinity LimitMEMLOCK=infinity", systemd)
	assert.True(t, strings.HasPrefix(shell, "ulimit -u unlimited -l unlimited ("), shell)
	assert.Contains(t, shell, "CAP_SYS_RESOURCE")
	systemd, shell = sharedRlimitsFix([]string{"RLIMIT_SIGPENDING=1", "RLIMIT_MSGQUEUE=2"})
	assert.Equal(t, "LimitSIGPENDING=infinity LimitMSGQUEUE=infinity", systemd)
	assert.True(t, strings.HasPrefix(shell, "ulimit -i unlimited -q unlimited ("), shell)

	b, err := os.ReadFile("../docs/operations.md")
	require.NoError(t, err)
	_, logs, ok := strings.Cut(string(b), "\n## Logs\n")
	require.True(t, ok, "docs/operations.md has no Logs section")
	logs, _, _ = strings.Cut(logs, "\n## ")
	head, _, _ := strings.Cut(sharedRlimitsMsg, " (")
	assert.Contains(t, logs, "| warn | `"+head+" …` | `bounds`, `systemd`, `shell`", "the Logs table lists the warning")
}
