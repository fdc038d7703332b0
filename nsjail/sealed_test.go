package nsjail

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"agentjail/internal/systest"
)

// sealedChildEnv makes this test binary, exec'd from the sealed copy, report
// what it sees of itself and exit, before any test runs.
const sealedChildEnv = "AGENTJAIL_SEALED_CHILD"

func init() {
	if os.Getenv(sealedChildEnv) != "1" {
		return
	}
	exe, _ := os.Readlink("/proc/self/exe")
	dumpable, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	// The running binary must not be writable, by any route (docs/security.md F07).
	var w []string
	if f, err := os.OpenFile("/proc/self/exe", os.O_WRONLY, 0); err == nil {
		w = append(w, "open-wronly:OK")
		f.Close()
	} else {
		w = append(w, "open-wronly:"+errnoName(err))
	}
	if p, err := unix.Open("/proc/self/exe", unix.O_PATH, 0); err == nil {
		if f, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", p), os.O_RDWR, 0); err == nil {
			_, werr := f.WriteAt([]byte("x"), 0)
			w = append(w, "reopen-rdwr:open-OK-write-"+errnoName(werr))
			f.Close()
		} else {
			w = append(w, "reopen-rdwr:"+errnoName(err))
		}
	}
	fmt.Printf("sealed-child exe=%q dumpable=%d %s\n", exe, dumpable, strings.Join(w, " "))
	os.Exit(0)
}

func errnoName(err error) string {
	var errno syscall.Errno
	switch {
	case err == nil:
		return "OK"
	case errors.As(err, &errno):
		return unix.ErrnoName(errno)
	}
	return err.Error()
}

func sealedExe(t *testing.T) *os.File {
	t.Helper()
	f, err := SealedExe()
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

func TestSealedExeIsAnIdenticalSealedCopy(t *testing.T) {
	f := sealedExe(t)
	want, err := os.ReadFile("/proc/self/exe")
	require.NoError(t, err)
	got, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<40))
	require.NoError(t, err)
	require.Equal(t, len(want), len(got))
	require.Equal(t, sha256.Sum256(want), sha256.Sum256(got), "the copy differs from /proc/self/exe")

	seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	require.NoError(t, err)
	for _, seal := range []int{unix.F_SEAL_SEAL, unix.F_SEAL_SHRINK, unix.F_SEAL_GROW, unix.F_SEAL_WRITE} {
		assert.NotZero(t, seals&seal, "seal %#x missing: seals %#x", seal, seals)
	}
	if kernelAtLeast(6, 3) {
		assert.NotZero(t, seals&unix.F_SEAL_EXEC, "Linux 6.3+ has F_SEAL_EXEC: seals %#x", seals)
	}

	fdfl, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0)
	require.NoError(t, err)
	assert.Equal(t, unix.FD_CLOEXEC, fdfl&unix.FD_CLOEXEC, "must be close-on-exec: no jail may inherit it")

	var st unix.Stat_t
	require.NoError(t, unix.Fstat(int(f.Fd()), &st))
	assert.Equal(t, uint32(0o511), st.Mode&0o7777, "mode")
	link, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(link, "/memfd:agentjail-init"), link)
}

// Every way of writing to the copy fails, and its content is unchanged
// afterwards (docs/security.md F07: the CVE-2019-5736 class).
func TestSealedExeRefusesEveryWrite(t *testing.T) {
	systest.Require(t, systest.Root) // root passes every permission check: only the seals stop it
	f := sealedExe(t)
	fd := int(f.Fd())
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(fd, &st))
	before := sha256.Sum256(readAll(t, f, st.Size))

	_, err := unix.Pwrite(fd, []byte("x"), 0)
	assert.ErrorIs(t, err, unix.EPERM, "pwrite")
	_, err = unix.Seek(fd, 0, io.SeekStart)
	require.NoError(t, err)
	_, err = unix.Write(fd, []byte("x"))
	assert.ErrorIs(t, err, unix.EPERM, "write")
	assert.ErrorIs(t, unix.Ftruncate(fd, 0), unix.EPERM, "ftruncate shrink")
	assert.ErrorIs(t, unix.Ftruncate(fd, st.Size+4096), unix.EPERM, "ftruncate grow")
	assert.ErrorIs(t, unix.Fallocate(fd, 0, st.Size, 4096), unix.EPERM, "fallocate grow")
	assert.ErrorIs(t, unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, 4096), unix.EPERM, "punch hole")
	_, err = unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_FUTURE_WRITE)
	assert.ErrorIs(t, err, unix.EPERM, "the seals themselves are sealed")
	if kernelAtLeast(6, 3) { // before, nothing seals the mode: root may chmod the copy (the content stays sealed)
		assert.ErrorIs(t, unix.Fchmod(fd, 0o644), unix.EPERM, "F_SEAL_EXEC: the exec bits cannot change")
	}

	_, err = unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	assert.ErrorIs(t, err, unix.EPERM, "shared writable mapping")
	ro, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ, unix.MAP_SHARED)
	require.NoError(t, err, "a read-only shared mapping is fine")
	assert.ErrorIs(t, unix.Mprotect(ro, unix.PROT_READ|unix.PROT_WRITE), unix.EACCES, "upgrading a shared mapping to writable")
	require.NoError(t, unix.Munmap(ro))

	// A fresh open file description of the same memfd, as the jail would
	// get by reopening /proc/<pid>/exe: the seals are on the inode.
	for _, p := range []string{fmt.Sprintf("/proc/self/fd/%d", fd), fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), fd)} {
		g, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Logf("reopen %s O_RDWR: %v", p, err)
			continue
		}
		_, err = g.WriteAt([]byte("x"), 0)
		assert.ErrorIs(t, err, unix.EPERM, "write through a reopened %s", p)
		assert.ErrorIs(t, g.Truncate(0), unix.EPERM, "truncate through a reopened %s", p)
		g.Close()
	}
	_, err = os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", fd), os.O_RDWR|os.O_TRUNC, 0)
	assert.Error(t, err, "open O_TRUNC")

	assert.Equal(t, before, sha256.Sum256(readAll(t, f, st.Size)), "the sealed copy changed")
}

func readAll(t *testing.T, f *os.File, size int64) []byte {
	t.Helper()
	b, err := io.ReadAll(io.NewSectionReader(f, 0, size))
	require.NoError(t, err)
	return b
}

// execSealed runs this test binary from the sealed copy the way the
// runner must: in ExtraFiles, exec'd as /proc/self/fd/3 of the child.
func execSealed(t *testing.T, f *os.File, cred *syscall.Credential) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/proc/self/fd/3")
	cmd.Args = []string{"sealed-child"}
	cmd.Env = []string{sealedChildEnv + "=1"}
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{f}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

func TestSealedExeRuns(t *testing.T) {
	systest.Require(t, systest.Root)
	f := sealedExe(t)

	out := execSealed(t, f, nil)
	t.Log(strings.TrimSpace(out))
	assert.Contains(t, out, `exe="/memfd:agentjail-init (deleted)"`, "the running binary is the sealed copy")
	// Root opens past every permission bit; what stops it is the kernel's
	// deny-write on a running binary (ETXTBSY) or the seals (EPERM).
	assert.Regexp(t, `open-wronly:(ETXTBSY|EPERM|EACCES) `, out)
	assert.Regexp(t, `reopen-rdwr:(ETXTBSY|EPERM|EACCES|open-OK-write-EPERM)\b`, out)

	// The jail's host uid is unprivileged: mode 0511 lets it exec the copy
	// but not read it, so the kernel makes it non-dumpable at execve.
	out = execSealed(t, f, &syscall.Credential{Uid: 65534, Gid: 65534, NoSetGroups: true})
	t.Log(strings.TrimSpace(out))
	assert.Contains(t, out, `exe="/memfd:agentjail-init (deleted)"`)
	assert.Contains(t, out, "dumpable=0 ", "exec of an unreadable binary must leave the process non-dumpable")
	assert.Regexp(t, `open-wronly:(ETXTBSY|EPERM|EACCES) `, out)
}

// The init stage runs from the sealed copy in a real jail, as the
// unprivileged jail uid inside its user namespace.
func TestSealedExeRunsJail(t *testing.T) {
	base := testRunner(t)
	f := sealedExe(t)
	r := &Runner{Cgroups: base.Cgroups, UIDs: base.UIDs, ExeFile: f, RootDir: base.RootDir, Seccomp: base.Seccomp}
	// Its fd number here means something else in the child (fds 3, 4, 5
	// are the report, sync and exec fds): the child must exec its fd 5,
	// not the number the file has here.
	require.NotEqual(t, execFd, int(f.Fd()))

	s := &Spec{ID: NewID(), Program: []byte("import os\nprint('sealed', os.getuid())\n"), Report: true, Limits: DefaultLimits()}
	mounts := systest.MountCount()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := r.Run(ctx, s)
	require.NoError(t, err)
	systest.NoLeftovers(t, res.HostUID, s.ID, mounts)
	assert.Equal(t, StatusOK, res.Status, "stderr: %s", res.Stderr)
	assert.Equal(t, "sealed 1000\n", string(res.Stdout))
}

func TestSealedExeDoesNotLeak(t *testing.T) {
	before := systest.FdCount()
	for range 5 {
		f, err := SealedExe()
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	assert.Equal(t, before, systest.FdCount())
}

// BenchmarkSealedExe is the daemon's one-time start-up cost.
func BenchmarkSealedExe(b *testing.B) {
	var st unix.Stat_t
	require.NoError(b, unix.Stat("/proc/self/exe", &st))
	b.SetBytes(st.Size)
	for b.Loop() {
		f, err := SealedExe()
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	b.ReportMetric(float64(st.Size)/(1<<20), "exe-MiB")
}

// kernelAtLeast compares the running kernel's release with major.minor.
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var ma, mi int
	fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &ma, &mi)
	return ma > major || ma == major && mi >= minor
}
