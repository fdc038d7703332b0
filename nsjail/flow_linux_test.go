package nsjail

import (
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The program's status when pid 1 sent none (the jail was killed as a
// whole) is the flow's. A cold jail's is pid 1's own end; one whose wait
// failed has no status, and reads as SIGKILL, never as a nil state (a
// session goes on to its clean-up after a failed wait: its copy of this
// switch had that case, supervise's had not). A warm run's pid 1 ends as
// its program does: SIGKILL.
func TestKilledStatusPerFlow(t *testing.T) {
	sigkill := syscall.WaitStatus(syscall.SIGKILL)
	assert.Equal(t, sigkill, (&coldFlow{}).killedStatus(), "a cold jail never waited for")
	assert.Equal(t, sigkill, (&warmFlow{}).killedStatus(), "a warm run")

	cmd := exec.Command("/bin/sh", "-c", "exit 3")
	_ = cmd.Run()
	require.NotNil(t, cmd.ProcessState)
	f := &coldFlow{state: cmd.ProcessState}
	assert.Equal(t, 3, f.killedStatus().ExitStatus(), "a cold jail's pid 1's own end")
	assert.Equal(t, cmd.ProcessState, f.initStatus(), "a failed end explains a broken conversation")
	assert.Nil(t, (&coldFlow{}).initStatus())
	assert.Nil(t, (&warmFlow{}).initStatus())
}

// Every jail starts cold (newJail); only a warm run's start makes it
// warm. "Cold" means the start mode, and only that.
func TestNewJailIsCold(t *testing.T) {
	j := newJail(&Runner{}, 1)
	_, cold := j.flow.(*coldFlow)
	assert.True(t, cold)
	assert.True(t, j.threadBound())
	assert.Nil(t, warmOf(j))
	assert.Nil(t, runZygote(j))
}
