//go:build linux

package nsjail

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"agentjail/internal/systest"
)

// rootTreeProbe prints each mount's point, mount options and superblock
// options, then tries to write where nothing may be written and to make
// the root writable again.
const rootTreeProbe = `import ctypes, errno, os
for l in open("/proc/self/mountinfo"):
    f = l.split()
    print("mount", f[4], f[5], l.split(" - ")[1].split()[2])
for p in ("/x", "/dev/x", "/etc/x", "/usr/x", "/code/x", "/code/main.py"):
    try:
        open(p, "a")
        print("WROTE", p)
    except OSError as e:
        print("refused", p, errno.errorcode[e.errno])
libc = ctypes.CDLL(None, use_errno=True)
for p in (b"/", b"/dev"):
    r = libc.mount(None, p, None, 32 | 4096, None)  # MS_REMOUNT | MS_BIND, without MS_RDONLY
    print("remount", p.decode(), r, errno.errorcode.get(ctypes.get_errno(), ""))
with open("/dev/null", "w") as f:
    f.write("x")
print("zero", open("/dev/zero", "rb").read(2))
`

// A jail's root attached from the shared tree (Runner.rootTree) is
// read-only in its file system, not only in its mount: / and /dev, like
// /etc, are the daemon's tmpfs, which no jail can make writable again;
// the devices work; /code is the jail's own and read-only once the
// program is in. Warm and cold.
func TestRootTreeIsReadOnlyThroughAndThrough(t *testing.T) {
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: 1})
	for _, start := range []StartMode{StartWarm, StartCold} {
		out := probeRoot(t, r, start)
		if !rootTreesInUse(r) {
			t.Skip("no shared root tree on this kernel: the jails build their own (TestJailsBuildTheirOwnRootWithoutTheTree)")
		}
		assert.Regexp(t, `(?m)^mount / ro,\S* ro(,|$)`, out, "%s: the root and its file system are read-only", start)
		assert.Regexp(t, `(?m)^mount /dev ro,\S* ro(,|$)`, out, "%s: /dev and its file system are read-only", start)
		assert.NotContains(t, out, "mount /dev/null ", "%s: the devices are the tree's, not binds of the host's", start)
		assert.Regexp(t, `(?m)^mount /code ro,`, out, start)
		assert.NotContains(t, out, "WROTE", start)
		for _, p := range []string{"/", "/dev"} {
			assert.Contains(t, out, "remount "+p+" -1 EPERM\n", "%s: no jail makes %s writable again", start, p)
		}
		assert.Contains(t, out, "zero b'\\x00\\x00'\n", start)
	}
}

// probeRoot runs rootTreeProbe in a jail of r started as start; its
// output.
func probeRoot(t *testing.T, r *Runner, start StartMode) string {
	t.Helper()
	res, err := r.Run(context.Background(), &Spec{Program: []byte(rootTreeProbe), Limits: DefaultLimits(), Start: start})
	require.NoError(t, err, start)
	require.Equal(t, StatusOK, res.Status, "%s: %s", start, res.Stderr)
	assert.Equal(t, start, res.Start)
	return string(res.Stdout)
}

// Where the root tree cannot be made, each jail builds its root itself
// (with the /etc tree), warm and cold, with the same mounts' properties.
func TestJailsBuildTheirOwnRootWithoutTheTree(t *testing.T) {
	made := makeRootTree
	makeRootTree = func(*os.File, []string, []initLink) (*os.File, error) {
		return nil, errors.New("this test makes no tree")
	}
	t.Cleanup(func() { makeRootTree = made })
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: 1})
	for _, start := range []StartMode{StartWarm, StartCold} {
		out := probeRoot(t, r, start)
		assert.Regexp(t, `(?m)^mount / ro,`, out, start)
		assert.Regexp(t, `(?m)^mount /dev/null ro,`, out, "%s: the jail bound the host's devices itself", start)
		assert.Regexp(t, `(?m)^mount /code ro,`, out, start)
		assert.NotContains(t, out, "WROTE", start)
		assert.Contains(t, out, "zero b'\\x00\\x00'\n", start)
	}
	assert.False(t, rootTreesInUse(r))
}

// rootTreesInUse tells whether r's jails attach a shared root tree.
func rootTreesInUse(r *Runner) bool {
	r.etcMu.Lock()
	defer r.etcMu.Unlock()
	for _, t := range r.rootTrees {
		if t == nil {
			return false
		}
	}
	return len(r.rootTrees) > 0
}

// The root tree shares no mount events with the daemon's mount
// namespace, either way, on a host whose / is shared (as systemd makes a
// unit's): a mount the daemon's namespace makes below a bind appears in
// neither the tree nor a jail's clone of it; a mount on a clone (a
// jail's init holds CAP_SYS_ADMIN over its own) appears nowhere else; a
// nested bind adds no mount to the daemon's namespace; and a link in a
// bind's host content leads nowhere out of the tree. Run in a mount
// namespace of the test's own thread, made rshared.
func TestRootTreeSharesNoMountEvents(t *testing.T) {
	systest.Require(t, systest.Root)
	dir := t.TempDir()
	for _, d := range []string{"ro/sub", "ro/nested", "ro/sub2", "etc", "out/x"} {
		require.NoError(t, os.MkdirAll(dir+"/"+d, 0o755))
	}
	require.NoError(t, os.Symlink(dir+"/out", dir+"/ro/link"))
	rel := strings.TrimPrefix(dir, "/")
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with its namespace
		errc <- func() error {
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				return err
			}
			// Private first: nothing of this namespace's reaches the host's.
			if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
				return err
			}
			if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SHARED, ""); err != nil {
				return err
			}
			etcFd, err := unix.OpenTree(unix.AT_FDCWD, dir+"/etc", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
			if err != nil {
				return err
			}
			etc := os.NewFile(uintptr(etcFd), "etc")
			defer etc.Close()
			tree, err := newRootTree(etc, []string{dir + "/ro", dir + "/ro/nested"}, nil)
			if err != nil {
				return errSkip{err} // a kernel that cannot mount on a detached tree (before 6.15)
			}
			defer tree.Close()
			_, err = newRootTree(etc, []string{dir + "/ro", dir + "/ro/link/x"}, nil)
			if !errors.Is(err, unix.ELOOP) {
				return fmt.Errorf("a bind through a link: %v, want ELOOP", err)
			}
			if isMountPoint(dir + "/out/x") {
				return errors.New("the tree's bind followed a link out of the tree, into the daemon's namespace")
			}
			if isMountPoint(dir + "/ro/nested") {
				return errors.New("the tree's nested bind was mounted in the daemon's namespace too")
			}
			if err := unix.Mount("tmpfs", dir+"/ro/sub", "tmpfs", 0, ""); err != nil {
				return err
			}
			if err := os.WriteFile(dir+"/ro/sub/marker", nil, 0o644); err != nil {
				return err
			}
			clone, err := etcClone(tree)
			if err != nil {
				return err
			}
			defer unix.Close(clone)
			for name, fd := range map[string]int{"the tree": int(tree.Fd()), "a jail's clone": clone} {
				if unix.Faccessat(fd, rel+"/ro/sub/marker", unix.F_OK, 0) == nil {
					return fmt.Errorf("a mount of the daemon's namespace appeared in %s", name)
				}
			}
			tmp, err := readOnlyTmpfs("size=4k", func(int) error { return nil })
			if err != nil {
				return err
			}
			defer tmp.Close()
			if err := unix.MoveMount(int(tmp.Fd()), "", clone, rel+"/ro/sub2", unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
				return err
			}
			if isMountPoint(dir + "/ro/sub2") {
				return errors.New("a mount on a jail's clone appeared in the daemon's namespace")
			}
			return nil
		}()
	}()
	err := <-errc
	var skip errSkip
	if errors.As(err, &skip) {
		t.Skipf("no shared root tree on this kernel: %v", skip.err)
	}
	require.NoError(t, err)
}

type errSkip struct{ err error }

func (e errSkip) Error() string { return e.err.Error() }

// isMountPoint tells whether path is a mount point in this thread's mount
// namespace.
func isMountPoint(path string) bool {
	b, err := os.ReadFile("/proc/thread-self/mountinfo")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == path {
			return true
		}
	}
	return false
}
