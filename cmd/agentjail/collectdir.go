package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"agentjail/daemon"
)

// --collect-dir DIR writes the collected files below DIR, at their paths
// in /workspace. The names come from the program (and, in daemon mode,
// through the daemon), so nothing they say may reach outside DIR: every
// open is an openat2(2) relative to DIR's descriptor with RESOLVE_BENEATH
// and RESOLVE_NO_SYMLINKS (no "..", no absolute path, no symbolic or magic
// link on the way, even one that is already in DIR), each missing
// directory is made with mkdirat one name at a time, and a file is made
// with O_EXCL: one that exists is not written unless --overwrite, and then
// the new content is written to a fresh file beside it and renamed over
// it, so that a hard link in DIR to some other file never gets the
// program's bytes. Files are 0644 and directories 0755, less the umask:
// nothing the program wrote becomes executable.

// resolveBeneath is how every path below DIR is resolved.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// collectWrite is what became of one collected file: written to dest, or
// not, and why.
type collectWrite struct {
	index int    // in the result's files
	dest  string // DIR/path
	err   error
}

// checkCollectDir refuses, before anything runs, a --collect-dir that
// would make a run that succeeds end in exit 125 for a reason known now:
// DIR is there and holds something, and --overwrite is not given (a rerun
// into the same DIR), or DIR is there and is no directory. A DIR that is
// missing or empty is fine; one that cannot be read is left to the
// writing, which says why.
func checkCollectDir(dir string, overwrite bool) error {
	if dir == "" {
		return nil
	}
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return nil
	case !st.IsDir():
		return usagef("--collect-dir %s: it exists and is not a directory; pick another DIR", shownText(dir))
	case overwrite:
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer f.Close()
	names, _ := f.Readdirnames(1)
	if len(names) == 0 {
		return nil
	}
	return usagef("--collect-dir %s: the directory is not empty (it holds %s): pass --overwrite to replace the files this run collects (others are left as they are), or pick another DIR; nothing was run",
		shownText(dir), shownText(names[0]))
}

// writeCollected writes each collected file that has content (not those
// with an error) below dir, made if missing. One that cannot be written
// does not stop the others.
func writeCollected(dir string, files []daemon.ResultFile, overwrite bool) []collectWrite {
	var out []collectWrite
	root, rootErr := -1, error(nil)
	for i, f := range files {
		if f.Error != "" || f.Content == nil {
			continue
		}
		cw := collectWrite{index: i, dest: filepath.Join(dir, f.Path)}
		if root < 0 && rootErr == nil {
			if root, rootErr = openDir(dir); rootErr == nil {
				defer unix.Close(root)
			}
		}
		if rootErr != nil {
			cw.err = rootErr
		} else if err := writeBeneath(root, f, overwrite); err != nil {
			cw.err = fmt.Errorf("%s: %w", shownText(cw.dest), err)
		}
		out = append(out, cw)
	}
	return out
}

// openDir makes dir if it is missing and opens it.
func openDir(dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return -1, err
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return fd, nil
}

// content is a collected file's bytes.
func content(f daemon.ResultFile) ([]byte, error) {
	if f.Encoding == "base64" {
		b, err := base64.StdEncoding.DecodeString(*f.Content)
		if err != nil {
			return nil, fmt.Errorf("bad base64 content: %v", err)
		}
		return b, nil
	}
	return []byte(*f.Content), nil
}

// writeBeneath writes one file below the directory root.
func writeBeneath(root int, f daemon.ResultFile, overwrite bool) error {
	names, err := splitRel(f.Path)
	if err != nil {
		return err
	}
	b, err := content(f)
	if err != nil {
		return err
	}
	parent, err := makeDirs(root, names[:len(names)-1])
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	base := names[len(names)-1]
	if !overwrite {
		return create(parent, base, b)
	}
	tmp := ".agentjail-" + randomHex(8) + ".tmp"
	if err := create(parent, tmp, b); err != nil {
		return err
	}
	if err := unix.Renameat(parent, tmp, parent, base); err != nil {
		_ = unix.Unlinkat(parent, tmp, 0)
		if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
			return errors.New("a directory of that name exists (--overwrite replaces files only)")
		}
		return err
	}
	return nil
}

// splitRel checks a collected file's path (relative to /workspace) and
// cuts it into its names. The daemon gives no other; this is the check
// that DIR does not depend on it.
func splitRel(p string) ([]string, error) {
	names := strings.Split(p, "/")
	for _, n := range names {
		if n == "" || n == "." || n == ".." || strings.IndexByte(n, 0) >= 0 {
			return nil, fmt.Errorf("the path %s would leave the directory", shownText(p))
		}
	}
	return names, nil
}

// makeDirs opens, below root, the directory of the given names, making
// each one that is missing; the caller closes it.
func makeDirs(root int, names []string) (int, error) {
	fd, err := unix.Dup(root)
	if err != nil {
		return -1, err
	}
	for _, n := range names {
		next, err := openBeneath(fd, n, unix.O_PATH|unix.O_DIRECTORY, 0)
		if errors.Is(err, unix.ENOENT) {
			if err = unix.Mkdirat(fd, n, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = openBeneath(fd, n, unix.O_PATH|unix.O_DIRECTORY, 0)
			}
		}
		unix.Close(fd)
		if err != nil {
			return -1, describe(n, err)
		}
		fd = next
	}
	return fd, nil
}

// create writes b to a new file name in dir: an existing one is an error.
func create(dir int, name string, b []byte) error {
	fd, err := openBeneath(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, unix.EEXIST) {
			return errors.New("it exists (--overwrite replaces it)")
		}
		return describe(name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = unix.Unlinkat(dir, name, 0)
	}
	return err
}

// openBeneath is openat2(dirfd, name) under resolveBeneath, close-on-exec;
// EAGAIN (a rename raced the lookup) is tried again a few times.
func openBeneath(dirfd int, name string, flags, mode uint64) (int, error) {
	how := unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Mode: mode, Resolve: resolveBeneath}
	for try := 0; ; try++ {
		fd, err := unix.Openat2(dirfd, name, &how)
		if (err == unix.EAGAIN && try < 16) || err == unix.EINTR {
			continue
		}
		return fd, err
	}
}

// describe says why an open below DIR failed.
func describe(name string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("%s is a symbolic link, which is never followed", shownText(name))
	case errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("%s exists and is not a directory", shownText(name))
	case errors.Is(err, unix.EXDEV):
		return fmt.Errorf("%s would leave the directory", shownText(name))
	case errors.Is(err, unix.ENOSYS):
		return errors.New("this kernel has no openat2 (Linux 5.6 or later), which --collect-dir needs to write safely")
	}
	return fmt.Errorf("%s: %w", shownText(name), err)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
