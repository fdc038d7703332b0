//go:build linux && cgo

package nsjail

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"agentjail/internal/systest"
)

// withJail starts an init stage with b, on this goroutine's locked
// thread, runs f with it, and cleans the jail up (its mount namespace
// released at once: Runner.Close waits for that).
func withJail(t *testing.T, r *Runner, b built, f func(*jail)) *jail {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	uid, err := r.UIDs.Acquire()
	require.NoError(t, err)
	defer r.UIDs.Release(uid)
	j := newJail(r, uid)
	defer func() { require.NoError(t, j.cleanup()) }()
	require.NoError(t, j.flow.start(j, b))
	f(j)
	return j
}

// buildWith starts an init stage and gives it plan as its msgBuild:
// the answer (nil for msgReady).
func buildWith(t *testing.T, plan []byte) (err error) {
	t.Helper()
	withJail(t, freshRunner(t), built{plan: plan, tmpBytes: DefaultLimits().TmpBytes}, func(j *jail) { err = awaitBuilt(j) })
	return err
}

// A step that fails is named, with its errno, and nothing after it runs.
func TestInitNamesTheFailedStep(t *testing.T) {
	r := freshRunner(t)
	missing := "/nonexistent-" + NewID() // where the jail's user can look
	plan := buildPlan(r.buildConfig(jailBase{binds: append(binds(&Spec{}), missing)}, DefaultLimits().TmpBytes))
	err := buildWith(t, plan)
	var se *StageError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "bind "+missing, se.Stage)
	assert.Equal(t, syscall.ENOENT, se.Errno)
	assert.Equal(t, "", se.Msg)
}

// A plan the init stage cannot read is refused as such, whatever is wrong
// with it, before any step of it runs.
func TestInitRefusesAMalformedPlan(t *testing.T) {
	r := freshRunner(t)
	// A directory the jail's user may write in: a step that ran would
	// leave its mark there.
	open := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(open), 0o755)) // the test's own
	require.NoError(t, os.Chmod(open, 0o777))
	for _, cut := range []int{1, 5, 9} { // in the step's code, its stage, its argument
		p := (&plan{}).Op(opSeccomp, "filter").Blob(r.seccomp())
		p.Mkdir("mkdir", open+"/made", 0o755, false)
		p.Op(opChdir, "chdir").Str("/")
		err := buildWith(t, p.Bytes()[:len(p.Bytes())-cut])
		var se *StageError
		require.ErrorAs(t, err, &se, cut)
		assert.True(t, strings.HasPrefix(se.Msg, "malformed plan: "), "cut %d: %v", cut, err)
		assert.NoDirExists(t, open+"/made", "a step before the malformed one ran (cut %d)", cut)
	}
	p := (&plan{}).Op(opSeccomp, "filter").Blob(r.seccomp())
	p.Mkdir("mkdir", open+"/made", 0o755, false)
	require.NoError(t, buildWith(t, p.Bytes()))
	require.DirExists(t, open+"/made", "the well-formed plan's step runs")
	good := buildPlan(r.buildConfig(jailBase{binds: binds(&Spec{})}, DefaultLimits().TmpBytes))
	require.NoError(t, buildWith(t, good))
	notNUL := slices.Clone(good)
	stage := bytes.Index(notNUL, []byte("decode seccomp filter"))
	require.Positive(t, stage)
	notNUL[stage+len("decode seccomp filter")] = 'x' // the NUL after a string
	ifLast := (&plan{}).Op(opSeccomp, "filter").Blob(r.seccomp())
	ifLast.Op(opIfExists, "lstat").Str("/")
	for name, p := range map[string][]byte{
		"cut in its first step":      good[:3],
		"cut in a later step":        good[:len(good)-5],
		"a string without its NUL":   notNUL,
		"an unknown step":            append(slices.Clone(good), opLast, 0, 0, 0, 0, 0),
		"a step of code 0":           append(slices.Clone(good), 0, 0, 0, 0, 0, 0),
		"a condition with no step":   ifLast.Bytes(),
		"a condition on a condition": (&plan{}).Op(opIfExists, "lstat").Str("/").Op(opIfExists, "lstat").Str("/").Op(opChdir, "chdir").Str("/").Bytes(),
		"a NUL inside a string":      (&plan{}).Op(opSeccomp, "a\x00b").Blob(r.seccomp()).Bytes(),
		"no filter":                  (&plan{}).Op(opChdir, "chdir").Str("/").Bytes(),
		"a filter of half a program": (&plan{}).Op(opSeccomp, "decode seccomp filter").Blob(r.seccomp()[:12]).Bytes(),
		// A second filter would replace the first (and leak it).
		"a second filter": (&plan{}).Op(opSeccomp, "filter").Blob(r.seccomp()).Op(opSeccomp, "filter").Blob(r.seccomp()).Bytes(),
		// A plan may only add a mount's restrictions, never lift one
		// (MOUNT_ATTR_IDMAP here).
		"a mount attribute beyond the four": (&plan{}).Op(opSeccomp, "filter").Blob(r.seccomp()).
			Op(opSetattr, "setattr").Str("/").U64(unix.MOUNT_ATTR_IDMAP).Bool(false).Bytes(),
		// Nor may a bind's flags (MS_REMOUNT here, and MS_SHARED).
		"a bind flag beyond the four": (&plan{}).Op(opSeccomp, "filter").Blob(r.seccomp()).
			Op(opBindRO, "bind").Str("/usr").Str("/usr").U64(unix.MS_REMOUNT).U64(0).Bytes(),
		"a bind flag cleared beyond the four": (&plan{}).Op(opSeccomp, "filter").Blob(r.seccomp()).
			Op(opBindRO, "bind").Str("/usr").Str("/usr").U64(0).U64(unix.MS_SHARED).Bytes(),
		// The program comes with the request, never ahead of it.
		"a program in the build": (&plan{}).Op(opSeccomp, "filter").Blob(r.seccomp()).
			Op(opExec, "exec").U32(0).U32(0).U32(1).Str("/usr/bin/python3").U32(0).Bytes(),
	} {
		err := buildWith(t, p)
		var se *StageError
		require.ErrorAs(t, err, &se, name)
		switch name {
		case "no filter":
			assert.Equal(t, "decode seccomp filter", se.Stage, name)
			assert.Equal(t, "no usable filter", se.Msg, name)
		case "a filter of half a program":
			assert.Equal(t, "decode seccomp filter", se.Stage, name)
			assert.Equal(t, "malformed plan: no usable filter", se.Msg, name)
		case "a mount attribute beyond the four":
			assert.Equal(t, "malformed plan: a mount's attributes other than read-only, nosuid, nodev and noexec", se.Msg, name)
		case "a bind flag beyond the four", "a bind flag cleared beyond the four":
			assert.Equal(t, "malformed plan: a bind's flags other than read-only, nosuid, nodev and noexec", se.Msg, name)
		case "a program in the build":
			assert.Equal(t, "read build plan", se.Stage, name)
			assert.Equal(t, "the build plan names the program", se.Msg, name)
		default:
			// The step the plan broke in is named, when it got that far.
			assert.True(t, strings.HasPrefix(se.Msg, "malformed plan: "), "%s: %v", name, err)
		}
	}
}

// A message longer than the init stage's AJ_MAX_MSG (the parent's maxMsg,
// which never sends one: TestMessageTooLargeIsNotSent) is refused from its
// header, before the init stage allocates or reads a byte of it.
func TestInitRefusesAMessageTooLarge(t *testing.T) {
	r := freshRunner(t)
	good := buildPlan(r.buildConfig(jailBase{binds: binds(&Spec{})}, DefaultLimits().TmpBytes))
	withJail(t, r, built{plan: good, tmpBytes: DefaultLimits().TmpBytes}, func(j *jail) {
		require.NoError(t, awaitBuilt(j))
		hdr := []byte{byte(msgRequest), 0, 0, 0, 0}
		binary.LittleEndian.PutUint32(hdr[1:], maxMsg+1)
		_, err := j.sync.Write(hdr)
		require.NoError(t, err)
		// An init stage that took the header for good would wait for
		// the payload.
		require.NoError(t, j.sync.SetReadDeadline(time.Now().Add(5*time.Second)))
		err = j.expect(msgReady)
		var se *StageError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, "message too large", se.Msg)
		t.Logf("refused: %v", err)
	})
}

// The init stage sends its mount namespace with its first msgReady; the
// parent holds it for the run, and releases it when the jail is cleaned
// up (Runner.Close waits for that).
func TestParentHoldsTheJailsMountNamespace(t *testing.T) {
	r := freshRunner(t)
	before := systest.FdCount()
	j := withJail(t, r, r.build(jailBase{binds: binds(&Spec{})}, DefaultLimits().TmpBytes), func(j *jail) {
		require.NoError(t, awaitBuilt(j))
		require.NotNil(t, j.mntns)
		var held, jails, host syscall.Stat_t
		require.NoError(t, syscall.Fstat(int(j.mntns.Fd()), &held))
		require.NoError(t, syscall.Stat(fmt.Sprintf("/proc/%d/ns/mnt", j.proc.Pid), &jails))
		require.NoError(t, syscall.Stat("/proc/self/ns/mnt", &host))
		assert.Equal(t, jails.Ino, held.Ino, "the fd is the jail's mount namespace")
		assert.NotEqual(t, host.Ino, held.Ino)
	})
	assert.Nil(t, j.mntns)
	r.Close()
	assert.Equal(t, before, systest.FdCount(), "every fd of the jail closed, the mount namespace's too")
}

// A waiting init stage holds fds 0 to 4 only: stdio and fd 3 on
// /dev/null, and the socket to the parent. An fd this process holds
// without close-on-exec reaches the bootstrap, which closes it first
// thing (it runs as root until its user namespace exists).
func TestInitStageHoldsOnlyItsFds(t *testing.T) {
	r := freshRunner(t)
	leak, err := syscall.Open("/etc/hostname", syscall.O_RDONLY, 0) // no O_CLOEXEC
	require.NoError(t, err)
	defer syscall.Close(leak)
	withJail(t, r, r.build(jailBase{binds: binds(&Spec{})}, DefaultLimits().TmpBytes), func(j *jail) {
		require.NoError(t, awaitBuilt(j))
		// The init stage closes its copy of the mount namespace's fd
		// just after msgReady has taken it to us: a moment later.
		var fds []string
		assert.Eventually(t, func() bool {
			ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", j.proc.Pid))
			require.NoError(t, err)
			fds = fds[:0]
			for _, e := range ents {
				fds = append(fds, e.Name())
			}
			return slices.Equal([]string{"0", "1", "2", "3", "4"}, fds)
		}, 2*time.Second, time.Millisecond, "fd %d of this process must not be among them: %v", leak, fds)
	})
}

// A jail that stored much has its file system released before Run
// returns: its tmpfs must not outlive the run. A light one's is released
// after (Runner.Close waits for it).
func TestHeavyJailReleasesItsFileSystemBeforeRunReturns(t *testing.T) {
	r := freshRunner(t)
	defer r.Close()
	count := func() int {
		r.teardowns.mu.Lock()
		defer r.teardowns.mu.Unlock()
		return r.teardowns.started
	}
	for _, tc := range []struct {
		code  string
		files []File
		async int
	}{
		{"pass", nil, 1},
		{"open('/tmp/big', 'wb').write(b'x' * (24 << 20))", nil, 0},
		// Files are written before the jail's cgroup counts anything.
		{"pass", []File{{Path: "big", Content: make([]byte, 24<<20)}}, 0},
	} {
		before := count()
		res, err := r.Run(t.Context(), &Spec{Program: []byte(tc.code), Files: tc.files, Limits: DefaultLimits()})
		require.NoError(t, err)
		require.Equal(t, StatusOK, res.Status, string(res.Stderr))
		assert.Equal(t, tc.async, count()-before, "%s: peak %d bytes", tc.code, res.PeakMemoryBytes)
	}
}
