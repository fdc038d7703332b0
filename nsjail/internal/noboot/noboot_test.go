package noboot

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
	"agentjail/nsjail"
	"agentjail/nsjail/internal/wire"
)

// This test binary imports nsjail and not nsjail/boot: it has no C
// stages, so NewRunner refuses with the import to add.
func TestRunnerWithoutBootSaysWhatToImport(t *testing.T) {
	systest.Require(t, systest.Root)
	assert.Equal(t, wire.BootMissing, wire.Boot)
	_, err := nsjail.NewRunner()
	require.ErrorIs(t, err, nsjail.ErrNoBootstrap)
	assert.Contains(t, err.Error(), `import _ "agentjail/nsjail/boot"`)
}

// Nor does any thread of it get boot's timer slack: every thread keeps
// the main thread's (boot's slack_linux.c gives the runtime's sysmon
// thread wire.SysmonSlackNS). Root: reading another thread's
// timerslack_ns takes CAP_SYS_NICE.
func TestNoThreadHasBootsTimerSlack(t *testing.T) {
	systest.Require(t, systest.Root)
	slack := func(tid int) int {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/timerslack_ns")
		require.NoError(t, err)
		v, err := strconv.Atoi(strings.TrimSpace(string(b)))
		require.NoError(t, err)
		return v
	}
	main := slack(os.Getpid())
	tids := systest.Threads(t)
	require.Greater(t, len(tids), 1, "the Go runtime's threads, sysmon's among them")
	for _, tid := range tids {
		assert.Equal(t, main, slack(tid), "thread %d", tid)
	}
}
