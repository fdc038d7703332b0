//go:build linux && cgo

package nsjail

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The init stage's writer of /etc, /code and /workspace (init_linux.c)
// resolves every path beneath its directory: the paths Validate lets
// through work, and none that leaves the directory does, even if one got
// past Validate.
func TestWriteBeneathStaysBeneath(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	require.NoError(t, writeBeneath(dir, File{Path: "a/b/c.txt", Content: []byte("c")}, 0o644))
	require.NoError(t, writeBeneath(dir, File{Path: "top", Content: []byte("t")}, 0o644))
	b, err := os.ReadFile(filepath.Join(dir, "a/b/c.txt"))
	require.NoError(t, err)
	assert.Equal(t, "c", string(b))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link")))
	require.NoError(t, os.Symlink(outside+"/f", filepath.Join(dir, "dangling")))
	require.NoError(t, os.Symlink("a", filepath.Join(dir, "in"))) // inside, but a link all the same
	for _, p := range []string{"../escape", "a/../../escape", "link/escape", outside + "/escape", "dangling",
		// a missing directory on the way: the directories are made beneath too
		"n/../../escape/x", "m/../link/x/y", "in/x"} {
		assert.Error(t, writeBeneath(dir, File{Path: p, Content: []byte("x")}, 0o644), p)
	}
	ents, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, ents, "a write left the directory")
	_, err = os.Stat(filepath.Join(filepath.Dir(dir), "escape"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// prepareWith starts an init stage and gives it plan as its msgPrepare:
// the answer (nil for msgReady) and the exit status of the stage when it
// ended.
func prepareWith(t *testing.T, plan []byte) error {
	t.Helper()
	r := freshRunner(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	uid, err := r.UIDs.Acquire()
	require.NoError(t, err)
	defer r.UIDs.Release(uid)
	j := &jail{runner: r, uid: uid}
	defer func() { require.NoError(t, j.cleanup()) }()
	require.NoError(t, j.start(preparation{plan: plan, tmpBytes: DefaultLimits().TmpBytes}))
	return j.prepared()
}

// A step that fails is named, with its errno, and nothing after it runs.
func TestInitNamesTheFailedStep(t *testing.T) {
	r := freshRunner(t)
	missing := "/nonexistent-" + NewID() // where the jail's user can look
	plan := preparePlan(r.prepareConfig(append(binds(&Spec{}), missing), nil, DefaultLimits().TmpBytes))
	err := prepareWith(t, plan)
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
	good := preparePlan(r.prepareConfig(binds(&Spec{}), nil, DefaultLimits().TmpBytes))
	require.NoError(t, prepareWith(t, good))
	notNUL := slices.Clone(good)
	stage := bytes.Index(notNUL, []byte("decode seccomp filter"))
	require.Positive(t, stage)
	notNUL[stage+len("decode seccomp filter")] = 'x' // the NUL after a string
	ifLast := (&plan{}).op(opSeccomp, "filter").bytes(r.seccomp())
	ifLast.op(opIfExists, "lstat").str("/")
	for name, p := range map[string][]byte{
		"cut in its first step":      good[:3],
		"cut in a later step":        good[:len(good)-5],
		"a string without its NUL":   notNUL,
		"an unknown step":            append(slices.Clone(good), opLast, 0, 0, 0, 0, 0),
		"a step of code 0":           append(slices.Clone(good), 0, 0, 0, 0, 0, 0),
		"a condition with no step":   ifLast.b,
		"a condition on a condition": (&plan{}).op(opIfExists, "lstat").str("/").op(opIfExists, "lstat").str("/").op(opChdir, "chdir").str("/").b,
		"a NUL inside a string":      (&plan{}).op(opSeccomp, "a\x00b").bytes(r.seccomp()).b,
		"no filter":                  (&plan{}).op(opChdir, "chdir").str("/").b,
		"a filter of half a program": (&plan{}).op(opSeccomp, "decode seccomp filter").bytes(r.seccomp()[:12]).b,
	} {
		err := prepareWith(t, p)
		var se *StageError
		require.ErrorAs(t, err, &se, name)
		switch name {
		case "no filter", "a filter of half a program":
			assert.Equal(t, "decode seccomp filter", se.Stage, name)
			assert.Equal(t, "no usable filter", se.Msg, name)
		default:
			assert.Equal(t, "decode config", se.Stage, name)
			assert.Equal(t, "malformed plan", se.Msg, name)
		}
	}
}
