package daemon

// The daemon's socket: a live one is never stolen, a stale one replaced,
// a non-socket never removed; and which peers it lets in.

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"agentjail/internal/systest"
	"agentjail/nsjail"
)

// TestSocketSafety: a live daemon's socket is never stolen, a stale one is
// replaced, a non-socket is never removed, and mode and group are applied.
func TestSocketSafety(t *testing.T) {
	systest.Require(t, systest.Root) // chown to another user
	dir := t.TempDir()
	socketNeverStolen(t, dir)
	socketDirsChecked(t, dir)
	socketLinksOfOthers(t, dir)
	socketDirsMade(t, dir)
	socketLinksFollowed(t, dir)

	// The longest path the config takes binds, its temporary name too.
	long := filepath.Join(dir, "l")
	long += strings.Repeat("x", maxSocketPath-len(long))
	require.Len(t, long, maxSocketPath)
	l6, err := Listen(long, 0o600, -1)
	require.NoError(t, err, "a socket path of maxSocketPath bytes")
	require.NoError(t, RemoveSocket(l6))
	_, err = Listen(long+"x", 0o600, -1)
	require.ErrorContains(t, err, "at most 95")

	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, []byte("keep"), 0o644))
	_, err = Listen(plain, 0o660, -1)
	require.ErrorContains(t, err, "is not a socket")
	b, _ := os.ReadFile(plain)
	assert.Equal(t, "keep", string(b))
}

// socketNeverStolen: a live daemon's socket is never stolen, a stale one
// is replaced with the mode asked for, and a stopping daemon removes its
// own socket only.
func socketNeverStolen(t *testing.T, dir string) {
	sock := filepath.Join(dir, "a.sock")
	l1, err := Listen(sock, 0o600, -1)
	require.NoError(t, err)
	go func() {
		for {
			c, err := l1.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, err = Listen(sock, 0o600, -1)
	require.ErrorIs(t, err, ErrSocketInUse)
	l1.Close() // now stale: the file remains, nobody listens
	fi, err := os.Lstat(sock)
	require.NoError(t, err)
	require.Equal(t, os.ModeSocket, fi.Mode().Type())
	l2, err := Listen(sock, 0o660, os.Getgid())
	require.NoError(t, err, "a stale socket is replaced")
	defer l2.Close()
	fi, err = os.Lstat(sock)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o660), fi.Mode().Perm())
	// The instance whose socket was replaced removes nothing at its exit:
	// the path is l2's now.
	require.NoError(t, RemoveSocket(l1))
	_, err = os.Lstat(sock)
	require.NoError(t, err, "a stopping daemon removed the socket of the one that replaced it")
	require.NoError(t, RemoveSocket(l2))
	_, err = os.Lstat(sock)
	assert.ErrorIs(t, err, os.ErrNotExist, "a stopping daemon removes its own socket")
}

// socketDirsChecked: a directory others may write is refused, also above
// the socket's (unless sticky: /tmp, where t.TempDir lives, is); so is
// one another user owns. It leaves dir/open sticky, mode 1777.
func socketDirsChecked(t *testing.T, dir string) {
	open := filepath.Join(dir, "open")
	require.NoError(t, os.Mkdir(open, 0o755))
	require.NoError(t, os.Chmod(open, 0o777))
	_, err := Listen(filepath.Join(open, "s.sock"), 0o600, -1)
	require.ErrorContains(t, err, "may be written by its group or others (mode 0777)")
	require.NoError(t, os.Mkdir(filepath.Join(open, "sub"), 0o700))
	_, err = Listen(filepath.Join(open, "sub", "s.sock"), 0o600, -1)
	require.ErrorContains(t, err, "mode 0777")
	require.NoError(t, os.Chmod(open, 0o777|os.ModeSticky))
	l3, err := Listen(filepath.Join(open, "sub", "s.sock"), 0o600, -1)
	require.NoError(t, err, "a sticky directory above the socket's")
	require.NoError(t, RemoveSocket(l3))
	owned := filepath.Join(dir, "owned")
	require.NoError(t, os.Mkdir(owned, 0o700))
	require.NoError(t, os.Chown(owned, 65534, 65534))
	_, err = Listen(filepath.Join(owned, "s.sock"), 0o600, -1)
	require.ErrorContains(t, err, "is owned by uid 65534")
}

// socketLinksOfOthers: links on the way count: another user's link in a
// sticky directory passes a check of the resolved path, and they can
// re-point it later. It leaves dir/sticky (mode 1777) and dir/safe.
func socketLinksOfOthers(t *testing.T, dir string) {
	sticky := filepath.Join(dir, "sticky")
	require.NoError(t, os.Mkdir(sticky, 0o755))
	require.NoError(t, os.Chmod(sticky, 0o777|os.ModeSticky))
	safe := filepath.Join(dir, "safe")
	require.NoError(t, os.Mkdir(safe, 0o755))
	theirs := filepath.Join(sticky, "theirs")
	require.NoError(t, os.Symlink(safe, theirs))
	require.NoError(t, os.Lchown(theirs, 65534, 65534))
	_, err := Listen(filepath.Join(theirs, "s.sock"), 0o600, -1)
	require.ErrorContains(t, err, "symbolic link "+theirs+" is owned by uid 65534")
	// Nothing is made where their link points before it is refused.
	elsewhere := filepath.Join(dir, "elsewhere")
	theirs2 := filepath.Join(sticky, "theirs2")
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "deep"), theirs2))
	require.NoError(t, os.Lchown(theirs2, 65534, 65534))
	_, err = Listen(filepath.Join(theirs2, "s.sock"), 0o600, -1)
	require.ErrorContains(t, err, "symbolic link "+theirs2+" is owned by uid 65534")
	assert.NoDirExists(t, elsewhere)
	// A ".." after a link is not what a check of the cleaned text sees:
	// such paths are refused, as are relative ones.
	for _, p := range []string{filepath.Join(theirs, "..", "safe") + "/../s.sock", "rel/s.sock"} {
		_, err = Listen(p, 0o600, -1)
		require.ErrorContains(t, err, "must be a clean absolute path", p)
	}
}

// socketDirsMade: missing directories below trusted ones are made, 0755
// whatever the umask; none below one that others may write, even for a
// moment.
func socketDirsMade(t *testing.T, dir string) {
	safe := filepath.Join(dir, "safe")
	made := filepath.Join(safe, "a", "b")
	umask := unix.Umask(0o077)
	l5, err := Listen(filepath.Join(made, "s.sock"), 0o600, -1)
	unix.Umask(umask)
	require.NoError(t, err)
	require.NoError(t, RemoveSocket(l5))
	for _, d := range []string{filepath.Join(safe, "a"), made} {
		fi, err := os.Stat(d)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm(), d)
	}
	open2 := filepath.Join(dir, "open2")
	require.NoError(t, os.Mkdir(open2, 0o755))
	require.NoError(t, os.Chmod(open2, 0o777))
	_, err = Listen(filepath.Join(open2, "missing", "s.sock"), 0o600, -1)
	require.ErrorContains(t, err, open2+" may be written by its group or others (mode 0777)")
	assert.NoDirExists(t, filepath.Join(open2, "missing"))
}

// socketLinksFollowed: links are followed as the kernel does: a ".." in a
// link's target after another link goes up from where that link led, not
// from where the text says. ours -> ../safe/to-ab/../elsewhere2 with
// safe/to-ab -> <dir>/a/b is <dir>/a/elsewhere2, not safe/elsewhere2.
func socketLinksFollowed(t *testing.T, dir string) {
	sticky, safe, open := filepath.Join(dir, "sticky"), filepath.Join(dir, "safe"), filepath.Join(dir, "open")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "a", "elsewhere2"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(dir, "a", "b"), filepath.Join(safe, "to-ab")))
	ours := filepath.Join(sticky, "ours")
	require.NoError(t, os.Symlink("../safe/to-ab/../elsewhere2", ours))
	l4, err := Listen(filepath.Join(ours, "s.sock"), 0o600, -1)
	require.NoError(t, err, "our own relative link, through another and ..")
	assert.FileExists(t, filepath.Join(dir, "a", "elsewhere2", "s.sock"))
	assert.NoDirExists(t, filepath.Join(safe, "elsewhere2"), "the check went where the text says")
	require.NoError(t, RemoveSocket(l4))
	toOpen := filepath.Join(dir, "to-open")
	require.NoError(t, os.Symlink(open, toOpen))
	_, err = Listen(filepath.Join(toOpen, "s.sock"), 0o600, -1)
	require.ErrorContains(t, err, open+" may be written by its group or others (mode 1777)", "the link's target is the socket's directory")
}

// TestPeerNotAllowed: a peer whose uid and gid are not allowed gets 403 on
// every endpoint, and no jail runs.
func TestPeerNotAllowed(t *testing.T) {
	o := testOptions()
	o.AllowUIDs, o.AllowGIDs = []uint32{4242}, []uint32{4242}
	ran := false
	_, _, c := startServer(t, o, &fakeJailer{run: func(ctx context.Context, s *nsjail.Spec) (*nsjail.Result, error) {
		ran = true
		return okResult(s), nil
	}})
	for _, path := range []string{"/v1/health", "/metrics"} {
		resp, err := c.Get("http://agentjail" + path)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, path)
		assert.Equal(t, "forbidden", decodeErr(t, b).Error.Code)
	}
	resp, b := post(t, c, `{"code":"pass"}`)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.True(t, resp.Close, "a refused peer's connection is closed, not kept alive")
	assert.Equal(t, "forbidden", decodeErr(t, b).Error.Code)
	assert.False(t, ran)
}

// A peer whose uid is not allowed but whose primary gid is gets answers.
func TestPeerAllowedByGID(t *testing.T) {
	o := testOptions()
	o.AllowUIDs, o.AllowGIDs = []uint32{4242}, []uint32{uint32(os.Getgid())}
	_, _, c := startServer(t, o, &fakeJailer{})
	resp, err := c.Get("http://agentjail/v1/health")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}
