package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// TrustedOwner tells whether uid is root or this process's user: the only
// owners trusted for what decides who runs code (the config file, the
// socket's directories and links) and for the daemon a client talks to.
func TrustedOwner(uid uint32) bool { return uid == 0 || int(uid) == os.Geteuid() }

// maxSocketPath is the longest socket path Listen takes: a Unix socket
// path holds 107 bytes, and Listen binds path+".tmp-<pid>" first, the pid
// in 7 digits (pid_max is at most 4194304).
const maxSocketPath = 107 - len(".tmp-4194304")

// CheckSocketPath says what is wrong with a socket path for Listen (the
// config's socket.path, serve's --socket): it must be clean, so that the
// directory Listen checks is the one the kernel binds in (a ".." after a
// link would lead elsewhere), absolute, and short enough.
func CheckSocketPath(p string) error {
	switch {
	case !path.IsAbs(p) || path.Clean(p) != p:
		return fmt.Errorf("%q must be a clean absolute path", p)
	case len(p) > maxSocketPath:
		return fmt.Errorf("is %d bytes long; at most %d (a Unix socket path holds 107, and the daemon binds a temporary name up to 12 bytes longer first)", len(p), maxSocketPath)
	}
	return nil
}

// ErrSocketInUse means another live daemon answers on the socket path.
var ErrSocketInUse = errors.New("socket is in use by a running daemon")

// Listen creates the daemon's Unix socket at path with the given mode and
// group (gid -1: keep the daemon's) without a window in which it is
// reachable with other permissions: the socket is bound under a temporary
// name with its mode (umask), chowned without following links, then renamed
// into place. A socket left by a dead daemon is replaced; one that a live
// daemon answers on is not stolen; anything that is not a socket is never
// removed. The socket's directory must be writable by root (the daemon's
// user) only: whoever else may write it could swap the temporary socket
// between the bind and the rename, or put their own socket at the path.
// Listen refuses any other (trustedDir).
func Listen(path string, mode os.FileMode, gid int) (net.Listener, error) {
	if err := CheckSocketPath(path); err != nil {
		return nil, fmt.Errorf("socket path: %w", err)
	}
	// Checked before anything is probed or made there.
	if err := trustedDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("socket directory: %w; put the socket in a directory only root may write, such as /run/agentjail (the unit's RuntimeDirectory=)", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket; remove it or choose another socket path", path)
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", path, ErrSocketInUse)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("probe existing socket %s: %w", path, err)
		}
		// Stale: nobody listens. It is replaced by the rename below.
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	tmp := fmt.Sprintf("%s.tmp-%07d", path, os.Getpid()) // 12 bytes more (maxSocketPath)
	_ = os.Remove(tmp)
	// The mode comes from the umask at bind: a chmod by name afterwards
	// would follow a symbolic link swapped in for it. (Start-up only: no
	// other goroutine creates files meanwhile.)
	old := unix.Umask(0o777 &^ int(mode.Perm()))
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	unix.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// The listener must not unlink the final path on Close by its old
	// name; the daemon removes its socket itself.
	l.SetUnlinkOnClose(false)
	fail := func(err error) (net.Listener, error) {
		l.Close()
		os.Remove(tmp)
		return nil, err
	}
	if gid >= 0 {
		if err := os.Lchown(tmp, -1, gid); err != nil {
			return fail(fmt.Errorf("chown socket to group %d: %w", gid, err))
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(fmt.Errorf("move socket into place: %w", err))
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fail(fmt.Errorf("socket %s: %w", path, err))
	}
	return &socketListener{UnixListener: l, path: path, file: fi}, nil
}

// trustedDir checks that no user but root (or this process's) can replace
// dir or what is in it: dir and every directory above it are owned by root
// or this process's user and not writable by group or others, except an
// ancestor with the sticky bit (such as /tmp), in which others cannot move
// or remove what they do not own. It follows dir's symbolic links itself,
// one component at a time, and each link on the way must be owned by root
// or this process's user too: another user's link in a sticky directory
// would pass a check of the resolved path, and its owner could re-point it
// afterwards (a link cannot be changed, only replaced, which the sticky
// directory refuses to anyone else). It makes what is missing of dir
// (mode 0755), each directory in one it has already found trusted, so
// that nothing is made where another user's link points. dir is clean and
// absolute (CheckSocketPath).
//
// It trusts what lstat says of owner and mode. A file system whose owner
// reports its own (FUSE) could claim root's; root enters another user's
// FUSE mount only where /etc/fuse.conf has user_allow_other.
func trustedDir(d string) error {
	owner := func(p string, st *unix.Stat_t) error {
		if !TrustedOwner(st.Uid) {
			return fmt.Errorf("%s is owned by uid %d", p, st.Uid)
		}
		return nil
	}
	// The resolved directories, from / down: each must be trusted as an
	// ancestor; the last is dir itself, checked more strictly below.
	walked, rest, links := "/", strings.Split(d, "/"), 0
	var st unix.Stat_t
	checkDir := func(p string) error {
		if err := unix.Lstat(p, &st); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return fmt.Errorf("%s is not a directory", p)
		}
		if err := owner(p, &st); err != nil {
			return err
		}
		if st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
			return fmt.Errorf("%s may be written by its group or others (mode %04o)", p, st.Mode&0o7777)
		}
		return nil
	}
	if err := checkDir(walked); err != nil {
		return err
	}
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			walked = filepath.Dir(walked)
			continue
		}
		p := filepath.Join(walked, c)
		err := unix.Lstat(p, &st)
		if errors.Is(err, unix.ENOENT) {
			// Another user may have made p first, in a sticky walked: the
			// checks below judge whatever is there. Ours gets 0755 whatever
			// the umask (clients in socket.group must reach the socket);
			// walked is trusted, so p is still ours to chmod.
			if err = unix.Mkdir(p, 0o755); err == nil {
				err = unix.Chmod(p, 0o755)
			}
			if err == nil || errors.Is(err, unix.EEXIST) {
				err = unix.Lstat(p, &st)
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			if err := checkDir(p); err != nil {
				return err
			}
			walked = p
			continue
		}
		if err := owner(p, &st); err != nil {
			return fmt.Errorf("symbolic link %w", err)
		}
		if links++; links > 40 {
			return fmt.Errorf("%s: %w", d, unix.ELOOP)
		}
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		if filepath.IsAbs(target) {
			walked = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	// dir itself (stat again: a ".." may have been last): not even a
	// sticky one may be written by others, who could put their own socket
	// at the path before the daemon's.
	if err := unix.Lstat(walked, &st); err != nil {
		return fmt.Errorf("%s: %w", walked, err)
	}
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("%s may be written by its group or others (mode %04o)", walked, st.Mode&0o7777)
	}
	return nil
}

// socketListener remembers which file it was bound to, so that the daemon
// removes its own socket at exit and not one a newer instance put there.
type socketListener struct {
	*net.UnixListener
	path string
	file os.FileInfo
}

// RemoveSocket removes the socket file of a listener made by Listen, if
// the path still names that socket: after a newer daemon took the path
// over (ours was stale to it, or removed by hand), the path is the
// newer's and stays. Other listeners (socket activation) are left alone.
func RemoveSocket(l net.Listener) error {
	sl, ok := l.(*socketListener)
	if !ok {
		return nil
	}
	fi, err := os.Lstat(sl.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !os.SameFile(fi, sl.file) {
		return nil
	}
	return os.Remove(sl.path)
}

// HTTPClient is an HTTP client whose every request goes to the daemon's
// Unix socket at path (the URL's host is ignored: use http://agentjail/…).
func HTTPClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}}
}

// PeerCred is the other end's credentials on a Unix socket connection
// (SO_PEERCRED: taken by the kernel at connect or listen, not claimed by
// the peer). They are those of whoever made the socket listen: under
// socket activation systemd (root), whatever the service's User=; a
// process that later gives the fd away, or drops its privileges, keeps
// them.
func PeerCred(c net.Conn) (*unix.Ucred, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil, fmt.Errorf("not a Unix socket connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return nil, err
	}
	return cred, cerr
}
