package nsjail

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The shared root trees (Runner.ShareEtc): the part of a jail's root that
// every jail of one base shares, made once as a detached tree, a clone of
// which each jail's build attaches as its root (buildPlan's
// rootFromTree). A jail then mounts only what is its own: /code, /dev/pts,
// /proc and the scratch tmpfs; the binds, links, /etc and /dev (some 25
// mount, file and link calls a jail, and their unmounting at its end) are
// the tree's, made by one open_tree of the daemon's.
//
// The tree is read-only through and through: its root and /dev are
// tmpfs whose superblocks are read-only (only CAP_SYS_ADMIN of the host's
// user namespace could change that), /etc is the /etc tree (etcTree), and
// the binds are read-only, nosuid and nodev, as a jail's own were. /dev
// holds device nodes the daemon made (mknod: a jail's user namespace
// cannot), the five a jail's /dev had as binds of the host's.
//
// Nothing propagates between the tree and the daemon's mount namespace,
// either way: each bind is a clone of a host mount, which would keep its
// peer group (a host or unit whose / is shared), so each is made private
// before it is attached, and the whole tree once more at the end; a
// jail's clone of a private tree is private. The paths below the tree's
// root are walked without following a link (RESOLVE_BENEATH,
// RESOLVE_NO_SYMLINKS): an earlier bind's host content may hold links,
// and the daemon, real root, must not make or mount anything through one
// in its own namespace.

// maxRootTrees bounds the trees one Runner keeps: a base is an
// environment's /etc and its read-only mounts, and requests may name
// their own mounts. Beyond it, jails build their root themselves.
const maxRootTrees = 16

type rootTreeKey struct {
	etc   *Etc
	binds string
}

// rootTree is the detached root tree of base b, made on its first use;
// nil when it cannot be made (a kernel that cannot mount on a detached
// tree, before about 6.15: the jails build their root, logged once).
func (r *Runner) rootTree(b jailBase) *os.File {
	etc := r.etcTree(b.etc)
	if etc == nil {
		return nil
	}
	k := rootTreeKey{b.etc, strings.Join(b.binds, "\x00")}
	r.etcMu.Lock()
	defer r.etcMu.Unlock()
	if t, ok := r.rootTrees[k]; ok {
		return t
	}
	if len(r.rootTrees) >= maxRootTrees {
		return nil
	}
	t, err := makeRootTree(etc, b.binds, hostLinksOnce())
	if err != nil && r.Log != nil {
		r.Log.Warn("jails build their own root: it could not be made once for them", "err", err)
	}
	if r.rootTrees == nil {
		r.rootTrees = map[rootTreeKey]*os.File{}
	}
	r.rootTrees[k] = t
	return t
}

// makeRootTree is newRootTree; a test makes it fail to see the jails
// build their own root.
var makeRootTree = newRootTree

// newRootTree makes the root tree: a read-only tmpfs with the binds, the
// links, a clone of the /etc tree etc, /dev and the jail's mount points.
func newRootTree(etc *os.File, binds []string, links []initLink) (*os.File, error) {
	t, err := readOnlyTmpfs("mode=0755", func(root int) error {
		for _, d := range []string{"etc", "dev", "proc", "code", "workspace", "tmp"} {
			if err := unix.Mkdirat(root, d, 0o755); err != nil {
				return os.NewSyscallError("mkdir /"+d, err)
			}
		}
		if err := unix.Fchmodat(root, "proc", 0o555, 0); err != nil {
			return os.NewSyscallError("chmod /proc", err)
		}
		if err := fillRootTree(root, etc, binds); err != nil {
			return err
		}
		// After the binds, as a jail's own root makes them.
		for _, l := range links {
			if err := unix.Symlinkat(l.Target, root, strings.TrimPrefix(l.Path, "/")); err != nil {
				return os.NewSyscallError("symlink "+l.Path, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := unix.MountSetattr(int(t.Fd()), "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Propagation: unix.MS_PRIVATE}); err != nil {
		t.Close()
		return nil, os.NewSyscallError("mount_setattr private", err)
	}
	// A jail attaches a clone of the whole tree: one that cannot be made
	// here could not be made for a jail either.
	fd, err := etcClone(t)
	if err != nil {
		t.Close()
		return nil, err
	}
	unix.Close(fd)
	return t, nil
}

// fillRootTree mounts the binds, /etc and /dev in the tree root.
func fillRootTree(root int, etc *os.File, binds []string) error {
	for _, b := range binds {
		// Not recursive: host submounts below b are not exposed.
		fd, err := unix.OpenTree(unix.AT_FDCWD, b, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err != nil {
			return os.NewSyscallError("open_tree "+b, err)
		}
		err = attachReadOnly(fd, root, strings.TrimPrefix(filepath.Clean(b), "/"), unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
		if err != nil {
			return fmt.Errorf("bind %s: %w", b, err)
		}
	}
	fd, err := unix.OpenTree(int(etc.Fd()), "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return os.NewSyscallError("open_tree /etc", err)
	}
	if err := attachReadOnly(fd, root, "etc", unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC); err != nil {
		return fmt.Errorf("/etc: %w", err)
	}
	dev, err := readOnlyTmpfs("size=64k,nr_inodes=64,mode=0755", fillDev)
	if err != nil {
		return fmt.Errorf("/dev: %w", err)
	}
	fd, err = unix.FcntlInt(dev.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	dev.Close()
	if err != nil {
		return os.NewSyscallError("dup /dev", err)
	}
	return attachReadOnly(fd, root, "dev", unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
}

// attachReadOnly sets attrs on the detached mount fd, makes it private,
// and moves it to rel below the tree root, whose directories it makes
// (mkdirsAt: through no link); it closes fd.
func attachReadOnly(fd, root int, rel string, attrs uint64) error {
	defer unix.Close(fd)
	// Private: a clone of a shared host mount would stay the host's peer,
	// and a mount on either would appear on the other.
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: attrs, Propagation: unix.MS_PRIVATE}); err != nil {
		return os.NewSyscallError("mount_setattr", err)
	}
	dir, err := mkdirsAt(root, rel)
	if err != nil {
		return os.NewSyscallError("mkdir /"+rel, err)
	}
	defer unix.Close(dir)
	if err := unix.MoveMount(fd, "", dir, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return os.NewSyscallError("move_mount", err)
	}
	return nil
}

// devNumbers are the device numbers of the devices a jail's /dev holds
// (devices): the memory devices' major 1, as Linux numbers them
// (Documentation/admin-guide/devices.txt).
var devNumbers = map[string]uint64{"null": unix.Mkdev(1, 3), "zero": unix.Mkdev(1, 5), "full": unix.Mkdev(1, 7),
	"random": unix.Mkdev(1, 8), "urandom": unix.Mkdev(1, 9)}

// fillDev makes a jail's /dev in the tmpfs root: the devices (devices,
// with the numbers Linux gives them, which the host's must have too), the
// links, and the mount points of /dev/pts and /dev/shm.
func fillDev(root int) error {
	for _, n := range devices {
		var st unix.Stat_t
		if err := unix.Stat("/dev/"+n, &st); err != nil {
			return os.NewSyscallError("stat /dev/"+n, err)
		}
		want, ok := devNumbers[n]
		if st.Mode&unix.S_IFMT != unix.S_IFCHR || !ok || st.Rdev != want {
			return fmt.Errorf("/dev/%s is not the character device %d:%d", n, unix.Major(want), unix.Minor(want))
		}
		if err := unix.Mknodat(root, n, unix.S_IFCHR|0o666, int(want)); err != nil {
			return os.NewSyscallError("mknod /dev/"+n, err)
		}
		if err := unix.Fchmodat(root, n, 0o666, 0); err != nil { // not the daemon's umask
			return os.NewSyscallError("chmod /dev/"+n, err)
		}
	}
	for _, l := range [][2]string{{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"},
		{"stderr", "/proc/self/fd/2"}, {"ptmx", "pts/ptmx"}} {
		if err := unix.Symlinkat(l[1], root, l[0]); err != nil {
			return os.NewSyscallError("symlink /dev/"+l[0], err)
		}
	}
	for _, d := range []string{"pts", "shm"} {
		if err := unix.Mkdirat(root, d, 0o755); err != nil {
			return os.NewSyscallError("mkdir /dev/"+d, err)
		}
	}
	return nil
}

// readOnlyTmpfs is a tmpfs with opts (comma-separated key=value), mounted
// nowhere, nosuid and noexec, filled by fill, then read-only to its
// superblock. (The tree's root takes nodev, like each of its mounts, in
// each jail's clone: etcClone.)
func readOnlyTmpfs(opts string, fill func(root int) error) (*os.File, error) {
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("fsopen tmpfs", err)
	}
	defer unix.Close(fs)
	for _, o := range strings.Split(opts, ",") {
		k, v, _ := strings.Cut(o, "=")
		if err := unix.FsconfigSetString(fs, k, v); err != nil {
			return nil, os.NewSyscallError("fsconfig "+k, err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return nil, os.NewSyscallError("fsconfig create", err)
	}
	mfd, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("fsmount", err)
	}
	t := os.NewFile(uintptr(mfd), "tree")
	if err := fill(mfd); err != nil {
		t.Close()
		return nil, err
	}
	if err := readOnlySuperblock(mfd); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// mkdirsAt makes rel and its parents below the directory fd root, and
// returns an O_PATH fd of it. Each step is opened beneath root and
// through no link: a link in a bind's host content fails the tree
// (ELOOP), never leads out of it.
func mkdirsAt(root int, rel string) (int, error) {
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS}
	dir, err := unix.Openat2(root, ".", how)
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." || c == ".." {
			unix.Close(dir)
			return -1, errors.New("not a clean absolute path")
		}
		if err := unix.Mkdirat(dir, c, 0o755); err != nil && err != unix.EEXIST {
			unix.Close(dir)
			return -1, err
		}
		next, err := unix.Openat2(dir, c, how)
		unix.Close(dir)
		if err != nil {
			return -1, err
		}
		dir = next
	}
	return dir, nil
}
