//go:build linux && cgo

package nsjail

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

// record is one record as bootstrap_linux.c and init_msg_linux.c write it
// (struct aj_record).
func record(kind byte, value int32, stage, msg string) []byte {
	rec := make([]byte, recordSize)
	rec[0] = kind
	binary.NativeEndian.PutUint32(rec[4:8], uint32(value))
	copy(rec[8:127], stage)
	copy(rec[128:255], msg)
	return rec
}

func TestBootstrapRecords(t *testing.T) {
	v, err := readRecord(bytes.NewReader(record('P', 4242, "", "")), 'P')
	require.NoError(t, err)
	assert.Equal(t, int32(4242), v)

	_, err = readRecord(bytes.NewReader(record('E', int32(syscall.ENOSPC), "unshare user namespace", "")), 'U')
	var se *StageError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "bootstrap: unshare user namespace", se.Stage)
	assert.Equal(t, syscall.ENOSPC, se.Errno)
	assert.ErrorIs(t, err, syscall.ENOSPC, "max_user_namespaces reached must be recognisable")

	_, err = readRecord(bytes.NewReader(record('P', 1, "", "")), 'U')
	assert.ErrorContains(t, err, `record 'P' instead of 'U'`)

	_, err = readRecord(bytes.NewReader(record('U', 0, "", "")[:10]), 'U')
	assert.ErrorContains(t, err, "bootstrap: unexpected EOF", "a bootstrap that died mid-record")

	// The init stage's msgError carries the same record.
	se = decodeRecord(record('E', int32(syscall.EPERM), "mount /proc", "remount read-only"))
	assert.Equal(t, &StageError{Stage: "mount /proc", Errno: syscall.EPERM, Msg: "remount read-only"}, se)
	assert.Contains(t, decodeRecord([]byte("{}")).Msg, "a failure record of 2 bytes")
}

// reapLostInit ends this thread's children that are in a pid namespace
// of their own (a jail's pid 1 whose pid record never came), and only
// those.
func TestReapLostInit(t *testing.T) {
	systest.Require(t, systest.Root)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	lost := exec.Command("/bin/sleep", "30")
	lost.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	require.NoError(t, lost.Start())
	defer func() { _ = lost.Process.Kill() }() // when the test fails
	other := exec.Command("/bin/sleep", "30")
	require.NoError(t, other.Start())
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()

	reapLostInit()
	assert.Error(t, syscall.Kill(lost.Process.Pid, 0), "the lost pid 1 was killed and waited for")
	assert.NoError(t, syscall.Kill(other.Process.Pid, 0), "a child in our own pid namespace is not a jail")
}

// A binary without the bootstrap (here /bin/true: it exits at once,
// sending nothing) fails the run at once, not after setupTimeout, and
// leaves no child unwaited for.
func TestExeWithoutBootstrapFailsFast(t *testing.T) {
	r := freshRunner(t)
	r.Exe, r.ExeFile = "/bin/true", nil
	t0 := time.Now()
	_, err := r.Run(t.Context(), &Spec{Program: []byte("pass"), Limits: DefaultLimits()})
	assert.ErrorContains(t, err, "bootstrap")
	assert.Less(t, time.Since(t0), setupTimeout/10, "the bootstrap's end was not seen: %v", err)
	// Its own child only (comm "true"): other children of this process,
	// such as another runner's bootstrap between its exit and its Wait,
	// may be zombies for a moment (seen in the emulated VM guest).
	for _, pid := range systest.Children(os.Getpid()) {
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		comm, rest, _ := strings.Cut(string(st), ") ")
		if strings.HasSuffix(comm, "(true") {
			assert.False(t, strings.HasPrefix(rest, "Z"), "child %d (/bin/true) was never waited for", pid)
		}
	}
}

// An init stage that cannot read its request (here more fds than a
// message may carry) says so instead of ending without a word.
func TestInitReportsAnUnreadableConfig(t *testing.T) {
	r := freshRunner(t)
	withJail(t, r, r.build(jailBase{binds: binds(&Spec{})}, DefaultLimits().TmpBytes), func(j *jail) {
		require.NoError(t, awaitBuilt(j))
		null, err := os.Open(os.DevNull)
		require.NoError(t, err)
		defer null.Close()
		fds := make([]int, maxMsgFds+1)
		for i := range fds {
			fds[i] = int(null.Fd())
		}
		// No payload: the init stage may end (it does) before one is written.
		require.NoError(t, sendMsgFds(j.sync, msgRequest, nil, fds))
		err = j.expect(msgReady)
		var se *StageError
		require.ErrorAs(t, err, &se)
		assert.ErrorContains(t, err, fmt.Sprintf("more than %d fds", maxMsgFds))
	})
}
