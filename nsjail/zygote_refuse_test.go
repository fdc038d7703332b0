package nsjail

import (
	"context"
	"encoding/binary"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The zygote's own refusals of a fork, as the daemon's side sees them
// (zygote.py's _spawn and _recv): the daemon never sends such a zFork,
// so no other test reaches these paths.

// zForkFds is how many fds a zFork carries: the run's socket, its mount
// namespace and nestedNS others (zygote.py's Z_NS).
const zForkFds = 1 + 1 + nestedNS

// sendZFork sends the zygote of r's default environment a zFork with
// payload, the run's socket and n more fds (/dev/null): the daemon's end
// of the run's socket is returned.
func sendZFork(t *testing.T, r *Runner, payload []byte, n int) *os.File {
	t.Helper()
	ours, err := sendZForkErr(t, r, payload, n)
	require.NoError(t, err)
	return ours
}

// sendZForkErr is sendZFork, with sendMsgFds's error returned.
func sendZForkErr(t *testing.T, r *Runner, payload []byte, n int) (*os.File, error) {
	t.Helper()
	z := currentZygote(r, "default")
	require.NotNil(t, z, "no zygote up")
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	require.NoError(t, unix.SetNonblock(fds[0], true))
	ours := os.NewFile(uintptr(fds[0]), "run")
	t.Cleanup(func() { ours.Close() })
	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer null.Close()
	sent := []int{fds[1]}
	for range n {
		sent = append(sent, int(null.Fd()))
	}
	z.ctlMu.Lock()
	err = sendMsgFds(z.ctl, zFork, payload, sent)
	z.ctlMu.Unlock()
	unix.Close(fds[1])
	return ours, err
}

// A fork of a uid below the jails' range is answered with msgError on
// the run's socket, and the zygote serves the next run.
func TestZygoteRefusesAForkOfAnotherUID(t *testing.T) {
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: 1})
	// Below the jails' range, and one that setresuid would read as -1,
	// "unchanged" (the zygote's own uid).
	for _, uid := range []uint32{5, 1<<32 - 1} {
		ours := sendZFork(t, r, binary.LittleEndian.AppendUint32(nil, uid), zForkFds-1)
		_ = ours.SetDeadline(time.Now().Add(10 * time.Second))
		typ, rec, got, err := readMsgFds(ours)
		closeFds(got)
		require.NoError(t, err, "uid %d", uid)
		require.Equal(t, msgError, typ, "uid %d", uid)
		se := decodeRecord(rec)
		assert.Equal(t, "fork", se.Stage, "uid %d", uid)
		assert.Contains(t, se.Msg, "another uid", "uid %d", uid)
	}
	res, err := r.Run(context.Background(), &Spec{Program: []byte("print(1)"), Limits: DefaultLimits(), Start: StartWarm})
	require.NoError(t, err)
	assert.Equal(t, StatusOK, res.Status, string(res.Stderr))
	assert.Equal(t, StartWarm, res.Start)
	assert.Equal(t, "1\n", string(res.Stdout))
}

// A message with more fds than a fork takes ends the zygote (its payload
// would be read as the next header); the runtime replaces it.
func TestZygoteEndsOnAForkWithTooManyFds(t *testing.T) {
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: 1})
	py := zygoteOf(t, r, "default").py
	// The header and its fds go in one sendmsg, the payload in a write
	// after it: a zygote that has already ended on the header makes that
	// write fail with EPIPE, which is the end this test waits for.
	_, err := sendZForkErr(t, r, binary.LittleEndian.AppendUint32(nil, zygoteInside), zForkFds)
	if err != nil {
		require.ErrorIs(t, err, syscall.EPIPE)
	}
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(py, 0) == nil {
		require.True(t, time.Now().Before(deadline), "the zygote still runs 10 s after a message of %d fds", zForkFds+1)
		time.Sleep(20 * time.Millisecond)
	}
}
