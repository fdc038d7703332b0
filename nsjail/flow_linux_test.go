package nsjail

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The program's status when pid 1 sent none (the jail was killed as a
// whole) is pid 1's. A cold jail's is pid 1's own end; one whose wait
// failed has no status, and reads as SIGKILL, never as a nil state (a
// session goes on to its clean-up after a failed wait). A warm run's pid
// 1 ends as its program does: SIGKILL.
func TestKilledStatusPerPid1(t *testing.T) {
	sigkill := syscall.WaitStatus(syscall.SIGKILL)
	assert.Equal(t, sigkill, killedStatus((&childInit{}).state()), "a cold jail never waited for")
	assert.Equal(t, sigkill, killedStatus((&nestedInit{}).state()), "a warm run")
	assert.Equal(t, sigkill, killedStatus(newJail(&Runner{}, 1).initState()), "a jail not started")

	cmd := exec.Command("/bin/sh", "-c", "exit 3")
	_ = cmd.Run()
	require.NotNil(t, cmd.ProcessState)
	c := &childInit{st: cmd.ProcessState}
	assert.Equal(t, 3, killedStatus(c.state()).ExitStatus(), "a cold jail's pid 1's own end")
	assert.Equal(t, cmd.ProcessState, c.state(), "a failed end explains a broken conversation")
}

// Every jail starts cold (newJail), with no guard; only a warm run's
// start makes it warm. "Cold" means the start mode, and only that. A cold
// jail's pid 1 dies with the thread that started it, a warm run's does
// not.
func TestNewJailIsCold(t *testing.T) {
	j := newJail(&Runner{}, 1)
	_, cold := j.flow.(*coldFlow)
	assert.True(t, cold)
	assert.Equal(t, noGuard{}, j.guard)
	assert.Nil(t, warmOf(j))
	assert.True(t, (&childInit{}).threadBound())
	assert.False(t, (&nestedInit{}).threadBound())
}

// warmOf is j's warm flow; nil for a cold jail (the tests' look inside a
// warm run: the package itself never asks which flow a jail has).
func warmOf(j *jail) *warmFlow {
	f, _ := j.flow.(*warmFlow)
	return f
}

// awaitBuilt waits for j's build, as its flow does: a warm run's brings
// its namespaces.
func awaitBuilt(j *jail) error {
	if f := warmOf(j); f != nil {
		return f.awaitNS(j)
	}
	_, err := j.awaitBuild(0)
	return err
}

// The prepared pool asks a jail's guard whether what it was made from
// retires (a warm run's zygote), never for the zygote itself: a cold
// jail never does; a warm run does once its zygote has retired, and no
// more once the run has given its zygote back (release).
func TestRetiringPerGuard(t *testing.T) {
	assert.False(t, noGuard{}.retiring())
	z := &zygote{}
	g := &zygoteGuard{z: z}
	assert.False(t, g.retiring(), "a zygote that serves")
	z.retiring = true
	assert.True(t, g.retiring(), "a retired zygote's run")
	g.z = nil
	assert.False(t, g.retiring(), "a run released: no zygote")
}

// The steps both flows share never call back into a flow: a flow's
// method calls them, top to bottom, and they return. So no shared file
// names the jail's flow, or a flow's type; only the flows' own files and
// the callers that pick a flow's step (a run, the pool, a session, a
// zygote's launch) do.
func TestSharedStepsNeverCallTheFlow(t *testing.T) {
	shared := []string{"jail_linux.go", "deliver_linux.go", "handshake_linux.go", "supervise_linux.go",
		"watchdog_linux.go", "pid1_linux.go", "zygote_watch_linux.go", "network_linux.go"}
	fset := token.NewFileSet()
	for _, name := range shared {
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if n.Sel.Name == "flow" {
					t.Errorf("%s: a shared step calls the jail's flow", fset.Position(n.Pos()))
				}
			case *ast.Ident:
				if n.Name == "coldFlow" || n.Name == "warmFlow" {
					t.Errorf("%s: a shared step names the flow %s", fset.Position(n.Pos()), n.Name)
				}
			}
			return true
		})
	}
}

// The filter's listener is this process's from msgSeccomp on: a
// conversation that breaks before msgExec (here a second message with an
// fd) closes it, and the fd it came with. The old loop returned -1 before
// its deferred close, and the listener stayed open for the daemon's life.
func TestAwaitExecClosesTheListenerOnABrokenConversation(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	init := os.NewFile(uintptr(fds[1]), "init")
	defer init.Close()
	require.NoError(t, unix.SetNonblock(fds[0], true))
	j := newJail(&Runner{}, 1)
	j.sync = os.NewFile(uintptr(fds[0]), "sync")
	j.peer = j.sync
	defer j.sync.Close()

	fake, err := unix.Eventfd(0, unix.EFD_CLOEXEC) // stands in for the listener
	require.NoError(t, err)
	require.NoError(t, sendMsgFds(init, msgSeccomp, nil, []int{fake}))
	unix.Close(fake)
	require.NoError(t, sendMsgFds(init, msgExec, make([]byte, 8), []int{int(init.Fd())}))

	listener, err := j.awaitSeccomp()
	require.NoError(t, err)
	_, err = j.awaitExec(listener)
	var se *StageError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, se.Msg, "unexpected 1 fds")
	_, err = unix.FcntlInt(uintptr(listener), unix.F_GETFD, 0)
	assert.ErrorIs(t, err, unix.EBADF, "the listener is closed")
}
