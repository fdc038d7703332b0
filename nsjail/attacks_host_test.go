package nsjail

// The host before and after each attack: processes, mounts and cgroups
// left behind, and manifests of the trees a jail must not change.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"agentjail/internal/systest"
)

// hostSnapshot holds the host sentinels of A.4 items 1 and 3 that are cheap
// to take around every case.
type hostSnapshot struct {
	r        *Runner
	hostname string
	modules  string
	clockOff time.Duration // CLOCK_REALTIME - CLOCK_MONOTONIC
	fds      int           // our own open descriptors (the "daemon's")
}

func snapshotHost(t *testing.T, r *Runner) hostSnapshot {
	t.Helper()
	h, err := os.Hostname()
	require.NoError(t, err)
	poolSettled(t, r)
	return hostSnapshot{r: r, hostname: h, modules: readOrErr("/proc/modules"), clockOff: clockOffset(), fds: systest.FdCount()}
}

func (b hostSnapshot) compare(t *testing.T) {
	t.Helper()
	a := snapshotHost(t, b.r)
	assert.Equal(t, b.hostname, a.hostname, "host hostname changed")
	assert.Equal(t, b.modules, a.modules, "host /proc/modules changed")
	assert.InDelta(t, float64(b.clockOff), float64(a.clockOff), float64(time.Second), "host clock moved")
	// The runner's descriptors are closed when Run returns; allow the
	// listeners' accept goroutines a moment.
	deadline := time.Now().Add(time.Second)
	for a.fds > b.fds && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		a.fds = systest.FdCount()
	}
	assert.LessOrEqual(t, a.fds, b.fds, "the runner's open descriptors grew: %s", fdList())
}

// poolSettled waits until r's prepared jails are all ready (each holds a
// socket and a pidfd of ours), so that descriptor counts compare like with
// like: a replacement still starting has fewer than a ready one.
func poolSettled(t *testing.T, r *Runner) {
	t.Helper()
	p := poolOf(r)
	if p == nil {
		r.poolMu.Lock()
		if w := r.warm["default"]; w != nil {
			p = w.pool
		}
		r.poolMu.Unlock()
	}
	if p == nil {
		return
	}
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.ready) >= p.want && p.starting == 0
	}, 10*time.Second, time.Millisecond, "the prepared jails never all came back")
}

func readOrErr(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return "error: " + err.Error()
	}
	return string(b)
}

func clockOffset() time.Duration {
	var rt, mono unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_REALTIME, &rt)
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono)
	return time.Duration(rt.Nano() - mono.Nano())
}

func fdList() string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var l []string
	for _, e := range ents {
		p, _ := os.Readlink("/proc/self/fd/" + e.Name())
		l = append(l, e.Name()+"="+p)
	}
	return strings.Join(l, " ")
}

// treeManifest is, for each path below some roots, its mode, size and
// the sha256 of its content: the runtime and daemon sentinels of A.4 item
// 3, compared path by path, so that a change is named.
type treeManifest map[string]string

// manifestTree walks the roots. A path that vanishes during the walk (a
// root that does not exist, a file that a package manager removes between
// the directory's read and its lstat) is left out: the comparison names it
// as gone. Any other error fails the test.
func manifestTree(t *testing.T, roots ...string) treeManifest {
	t.Helper()
	m := treeManifest{}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			info, err := d.Info()
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			entry := fmt.Sprintf("%v %d", info.Mode(), info.Size())
			if d.Type().IsRegular() {
				sum, err := fileSum(p)
				if os.IsNotExist(err) {
					return nil
				}
				if err != nil {
					return err
				}
				entry += " " + sum
			}
			m[p] = entry
			return nil
		})
		require.NoError(t, err)
	}
	return m
}

func fileSum(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// unchanged fails the test, naming what changed, when after differs from
// the manifest taken before the first case. No jail can write these files
// (they are bound read-only, and owned by the host's root), but the host
// can: the VM suite's guest reads the host's root file system live, so a
// package installed on the host while the suite runs shows up here. The
// message says so, so that such a failure is not taken for an escape, nor
// an escape for a package.
func (before treeManifest) unchanged(t *testing.T, what string, after treeManifest) {
	t.Helper()
	if msg := before.diff(what, after); msg != "" {
		t.Error(msg)
	}
}

// diff says what differs between the two manifests; "" when nothing.
func (before treeManifest) diff(what string, after treeManifest) string {
	var changed, gone, added []string
	for p, b := range before {
		switch a, ok := after[p]; {
		case !ok:
			gone = append(gone, p)
		case a != b:
			changed = append(changed, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			added = append(added, p)
		}
	}
	if len(changed)+len(gone)+len(added) == 0 {
		return ""
	}
	list := func(ps []string) string {
		slices.Sort(ps)
		if len(ps) > 10 {
			return strings.Join(ps[:10], ", ") + fmt.Sprintf(" and %d more", len(ps)-10)
		}
		return strings.Join(ps, ", ")
	}
	return fmt.Sprintf("%s changed during the test: %d files changed (%s), %d gone (%s), %d new (%s). "+
		"If a package was installed, upgraded or removed on the host meanwhile (the VM suite's guest reads the host's files live), "+
		"that is the cause: run the suite again on a host left alone. Otherwise a jail wrote to the host: an escape.",
		what, len(changed), list(changed), len(gone), list(gone), len(added), list(added))
}

// A change of the host's runtime during the suite is named, file by file,
// with its likely cause; a root that is gone is no error (issue 22: a
// package installed on the host made the walk fail with lstat ENOENT).
func TestTreeManifestNamesTheChange(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a", "b", "sub/c"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644))
	}
	before := manifestTree(t, dir, filepath.Join(dir, "missing"))
	assert.Empty(t, before.diff("the runtime", manifestTree(t, dir)))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), []byte("A"), 0o644))
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "sub")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "new"), nil, 0o644))
	msg := before.diff("the runtime", manifestTree(t, dir, filepath.Join(dir, "missing")))
	assert.Contains(t, msg, "the runtime changed during the test: 1 files changed ("+dir+"/a), 2 gone ("+dir+"/sub, "+dir+"/sub/c), 1 new ("+dir+"/new)")
	assert.Contains(t, msg, "If a package was installed, upgraded or removed on the host meanwhile")
}

// The canary job of A.4 item 4.
