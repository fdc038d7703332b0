//go:build linux

package nsjail

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		res, err := r.Run(context.Background(), &Spec{Program: []byte(rootTreeProbe), Limits: DefaultLimits(), Start: start})
		require.NoError(t, err, start)
		require.Equal(t, StatusOK, res.Status, "%s: %s", start, res.Stderr)
		assert.Equal(t, start, res.Start)
		out := string(res.Stdout)
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
		res, err := r.Run(context.Background(), &Spec{Program: []byte(rootTreeProbe), Limits: DefaultLimits(), Start: start})
		require.NoError(t, err, start)
		require.Equal(t, StatusOK, res.Status, "%s: %s", start, res.Stderr)
		assert.Equal(t, start, res.Start)
		out := string(res.Stdout)
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
