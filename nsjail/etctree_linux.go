package nsjail

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The shared /etc trees (Runner.ShareEtc): one detached mount per Etc,
// made on its first use, a clone of which each jail's build attaches.

// etcTree is the detached mount (fsmount: in no mount table) that holds
// a jail's whole /etc with e's entries, made on its first use; nil when it
// cannot be made (the jails then write their own; logged).
func (r *Runner) etcTree(e *Etc) *os.File {
	r.etcMu.Lock()
	defer r.etcMu.Unlock()
	if t, ok := r.etcTrees[e]; ok {
		return t
	}
	t, err := makeEtcTree(e)
	if err != nil && r.Log != nil {
		r.Log.Warn("jails write their own /etc: it could not be made once for them", "err", err)
	}
	if r.etcTrees == nil {
		r.etcTrees = map[*Etc]*os.File{}
	}
	r.etcTrees[e] = t
	return t
}

// newEtcTree makes a tmpfs, mounted nowhere, and writes a jail's /etc
// into it: agentjail's own files and e's entries, root's, read-only to
// everyone else. Jails attach clones of it (etcClone): the kernel keeps
// it as long as a jail or this process holds one.
func newEtcTree(e *Etc) (*os.File, error) {
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("fsopen tmpfs", err)
	}
	defer unix.Close(fs)
	if err := unix.FsconfigSetString(fs, "mode", "0755"); err != nil {
		return nil, os.NewSyscallError("fsconfig mode", err)
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return nil, os.NewSyscallError("fsconfig create", err)
	}
	mfd, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("fsmount", err)
	}
	t := os.NewFile(uintptr(mfd), "etc-tree")
	if err := writeEtcTree(mfd, e); err != nil {
		t.Close()
		return nil, err
	}
	// Read-only the file system itself, not only this mount: a jail's
	// copy attached in its own namespace does not have its mount flags
	// locked (only a copied namespace's are), so whoever held
	// CAP_SYS_ADMIN there could remount it read-write; the superblock's
	// flag only CAP_SYS_ADMIN of the host's user namespace can change.
	// With it, no read updates a shared atime either.
	if err := readOnlySuperblock(mfd); err != nil {
		t.Close()
		return nil, err
	}
	if err := unix.MountSetattr(mfd, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		t.Close()
		return nil, os.NewSyscallError("mount_setattr", err)
	}
	// A copy of a mount that is in no mount table is refused (EINVAL) by
	// kernels older than about 6.15 (Debian 12's 6.1 among them): each
	// jail then writes its own /etc, as it did before the tree.
	fd, err := etcClone(t)
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("this kernel cannot copy a mount that is in no mount table: %w", err)
	}
	unix.Close(fd)
	return t, nil
}

// readOnlySuperblock makes the file system of the mount fd mfd
// read-only (fspick and a reconfiguration with "ro").
func readOnlySuperblock(mfd int) error {
	fd, err := unix.Fspick(mfd, "", unix.FSPICK_EMPTY_PATH|unix.FSPICK_CLOEXEC)
	if err != nil {
		return os.NewSyscallError("fspick /etc", err)
	}
	defer unix.Close(fd)
	if err := unix.FsconfigSetFlag(fd, "ro"); err != nil {
		return os.NewSyscallError("fsconfig ro", err)
	}
	if err := unix.FsconfigReconfigure(fd); err != nil {
		return os.NewSyscallError("fsconfig reconfigure", err)
	}
	return nil
}

// writeEtcTree writes agentjail's own /etc files and e's entries below the
// directory fd root, each directory before what it holds, each beneath
// root (no "..", no link followed on the way).
func writeEtcTree(root int, e *Etc) error {
	entries := make([]EtcEntry, 0, len(etcFiles))
	for _, f := range etcFiles {
		entries = append(entries, EtcEntry{Path: f.Path, Content: f.Content})
	}
	if e != nil {
		entries = append(entries, e.Entries...)
	}
	for _, en := range entries {
		if err := writeEtcEntry(root, en); err != nil {
			return os.NewSyscallError("write /etc/"+en.Path, err)
		}
	}
	return nil
}

func writeEtcEntry(root int, en EtcEntry) error {
	dir, name := filepath.Split(en.Path)
	parent := root
	if dir != "" {
		fd, err := unix.Openat2(root, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		parent = fd
	}
	// The modes are set, not left to this process's umask (the daemon
	// narrows its own while it binds its socket): a jail reads /etc as
	// "others".
	switch {
	case en.Dir:
		if err := unix.Mkdirat(parent, name, 0o755); err != nil {
			return err
		}
		return unix.Fchmodat(parent, name, 0o755, 0)
	case en.Link != "":
		return unix.Symlinkat(en.Link, parent, name)
	default:
		return writeNew(parent, name, en.Content)
	}
}

func writeNew(dir int, name string, b []byte) error {
	fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o444)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Fchmod(fd, 0o444); err != nil {
		return err
	}
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// etcClone is a read-only copy of the /etc tree t for one jail, which its
// init attaches at its /etc (opAttach), or of a root tree (rootTree) with
// the mounts in it, attached as its root; the jail owns it once sent.
// The attributes are set on the copy's top mount only: a root tree's
// /dev keeps its devices working, its binds keep their own.
func etcClone(t *os.File) (int, error) {
	fd, err := unix.OpenTree(int(t.Fd()), "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return -1, os.NewSyscallError("open_tree "+t.Name(), err)
	}
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, attr); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("mount_setattr /etc", err)
	}
	return fd, nil
}

// closeEtcTrees lets the kernel free the /etc trees once no jail holds
// a copy.
func (r *Runner) closeEtcTrees() {
	r.etcMu.Lock()
	defer r.etcMu.Unlock()
	for e, t := range r.etcTrees {
		if t != nil {
			t.Close()
		}
		delete(r.etcTrees, e)
	}
	for k, t := range r.rootTrees {
		if t != nil {
			t.Close()
		}
		delete(r.rootTrees, k)
	}
}
