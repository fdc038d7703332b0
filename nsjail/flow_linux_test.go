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
	assert.Equal(t, sigkill, killedStatus((&coldFlow{}).initState()), "a cold jail never waited for")
	assert.Equal(t, sigkill, killedStatus((&warmFlow{}).initState()), "a warm run")

	cmd := exec.Command("/bin/sh", "-c", "exit 3")
	_ = cmd.Run()
	require.NotNil(t, cmd.ProcessState)
	f := &coldFlow{state: cmd.ProcessState}
	assert.Equal(t, 3, killedStatus(f.initState()).ExitStatus(), "a cold jail's pid 1's own end")
	assert.Equal(t, cmd.ProcessState, f.initState(), "a failed end explains a broken conversation")
	assert.Nil(t, (&coldFlow{}).initState())
	assert.Nil(t, (&warmFlow{}).initState())
}

// Every jail starts cold (newJail); only a warm run's start makes it
// warm. "Cold" means the start mode, and only that.
func TestNewJailIsCold(t *testing.T) {
	j := newJail(&Runner{}, 1)
	_, cold := j.flow.(*coldFlow)
	assert.True(t, cold)
	assert.True(t, j.threadBound())
	assert.Nil(t, warmOf(j))
	assert.False(t, j.flow.retiring())
}

// warmOf is j's warm flow; nil for a cold jail (the tests' look inside a
// warm run: the package itself never asks which flow a jail has).
func warmOf(j *jail) *warmFlow {
	f, _ := j.flow.(*warmFlow)
	return f
}

// The prepared pool asks a jail's flow whether what it was made from
// retires (a warm run's zygote), never for the zygote itself: a cold
// jail never does; a warm run does once its zygote has retired, and
// no more once the run has given its zygote back (release).
func TestRetiringPerFlow(t *testing.T) {
	assert.False(t, (&coldFlow{}).retiring())
	z := &zygote{}
	f := &warmFlow{z: z}
	assert.False(t, f.retiring(), "a zygote that serves")
	z.retiring = true
	assert.True(t, f.retiring(), "a retired zygote's run")
	f.z = nil
	assert.False(t, f.retiring(), "a run released: no zygote")
}
