package nsjail

import (
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Collecting files out of a finished jail (docs/contract.md §3 "collect" and
// "files").
//
// The daemon reads as root from a directory that the jail could write, so
// nothing there is trusted: not a name, not a type, not a size seen earlier
// (docs/security.md F04; runc CVE-2025-31133/52565 all came from following a
// planted symlink). The rules, each enforced here:
//
//   - every open is an openat2(2) relative to the root fd with
//     RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV:
//     the kernel refuses any symlink, any "..", any /proc magic link and
//     any mount point on the way, at the moment of the open, so a swap
//     between a listing and an open cannot redirect it;
//   - directories are listed through fds opened that way, never by path;
//   - a file is first opened O_PATH (which opens nothing: no FIFO blocks,
//     no device is touched) to learn its type from the fd; only a regular
//     file is then opened for reading, O_NONBLOCK|O_NOCTTY, and must be the
//     same inode, still regular;
//   - its size comes from fstat of the fd it is read from, and at most
//     FileBytes+1 bytes are read through that fd: a larger file is refused
//     whole, never returned truncated.
//
// Hard links: the jail's /workspace is a tmpfs of its own, and link(2) never
// crosses file systems, so the jail cannot link a host file into it.

// Collect reads the files that globs name below root, a directory fd (the
// jail's /workspace, O_PATH is enough) that the jail could write. It never
// fails as a whole: each file that cannot be collected is an entry with
// Error.
//
// Patterns use path.Match per path element ("out/*.png", "result.json",
// "*/x.txt"); "*" matches names starting with a dot too, and a pattern
// matches entries of any type (a symlink or directory that matches is
// reported as refused, which is what the caller needs to know). A pattern
// without wildcards names one file, which may not exist ("no such file").
// A pattern with wildcards that matches nothing gives one entry whose Path
// is the pattern and whose Error says so (and why, when a directory on its
// way could not be opened), so that a caller always hears about every
// pattern it asked for.
//
// Entries come sorted by Path, each file once however many patterns match
// it. Files are taken in that order: one larger than FileBytes is refused
// on its own; once a file would pass TotalBytes, it and every later file
// are refused; past Files files, one last entry names the first file left
// out and how many more there were. The same tree gives the same result.
func Collect(root *os.File, globs []string, lim CollectLimits) []CollectedFile {
	lim = lim.withDefaults()
	c := &collector{root: int(root.Fd()), seen: map[string]bool{}}
	var out []CollectedFile
	for _, g := range globs {
		p, err := cleanPattern(g)
		if err != nil {
			out = append(out, CollectedFile{Path: g, Error: "invalid pattern: " + err.Error()})
			continue
		}
		if n, why := c.expand(p); n == 0 {
			msg := "no file matches"
			if why != "" {
				msg += " (" + why + ")"
			}
			out = append(out, CollectedFile{Path: p, Error: msg})
		}
	}
	sort.Strings(c.matches)

	remaining := lim.TotalBytes
	totalHit := false
	for i, p := range c.matches {
		if i == lim.Files {
			out = append(out, CollectedFile{Path: p, Error: fmt.Sprintf(
				"not collected: past the limit of %d files (this and %d more matching files)", lim.Files, len(c.matches)-i-1)})
			break
		}
		if totalHit {
			out = append(out, CollectedFile{Path: p, Error: fmt.Sprintf("not collected: the total limit of %d bytes was reached", lim.TotalBytes)})
			continue
		}
		f := c.read(p, lim.FileBytes, remaining)
		if f.Error == errTotal {
			totalHit = true
			f.Error = fmt.Sprintf("not collected: the total limit of %d bytes was reached", lim.TotalBytes)
		}
		remaining -= int64(len(f.Content))
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// errTotal marks a file that does not fit in what is left of TotalBytes.
const errTotal = "\x00total"

// resolveBeneath is how every path below the root is resolved: no symlink
// (not even a final one: O_NOFOLLOW alone would still follow intermediate
// ones), no magic link, no "..", no mount point crossed.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

type collector struct {
	root    int
	seen    map[string]bool
	matches []string
}

// open is openat2(root, rel) under resolveBeneath.
func (c *collector) open(rel string, flags uint64) (int, error) {
	return openBeneath(c.root, rel, flags, 0)
}

// openBeneath is openat2(dirfd, rel) under resolveBeneath, close-on-exec.
// The kernel answers EAGAIN when a rename or mount raced the lookup (it
// cannot then vouch for RESOLVE_BENEATH); a few retries, then the error
// stands.
func openBeneath(dirfd int, rel string, flags, mode uint64) (int, error) {
	how := unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Mode: mode, Resolve: resolveBeneath}
	for try := 0; ; try++ {
		fd, err := unix.Openat2(dirfd, rel, &how)
		if (err == unix.EAGAIN && try < 16) || err == unix.EINTR {
			continue
		}
		return fd, err
	}
}

// expand adds the paths that pattern p matches to c.matches and returns
// how many it matched; why says what stopped it when that was a directory
// on the way that exists but could not be opened.
func (c *collector) expand(p string) (n int, why string) {
	elems := strings.Split(p, "/")
	// The leading elements without wildcards name one directory (or, for a
	// pattern without any wildcard, one file): no listing needed.
	lit := 0
	for lit < len(elems) && !hasMeta(elems[lit]) {
		lit++
	}
	if lit == len(elems) {
		c.add(p)
		return 1, ""
	}
	dirs := []string{strings.Join(elems[:lit], "/")}
	for i := lit; i < len(elems) && len(dirs) > 0; i++ {
		last := i == len(elems)-1
		var next []string
		for _, d := range dirs {
			names, err := c.list(d)
			if err != nil {
				// A directory on the way that is missing, not a directory,
				// or a symlink matches nothing. Only the fixed prefix is
				// worth explaining: below a wildcard, entries that are not
				// directories are expected.
				if i == lit && d != "" && !errors.Is(err, unix.ENOENT) {
					why = d + ": " + c.whyNotDir(d, err)
				}
				continue
			}
			for _, name := range names {
				if ok, _ := path.Match(elems[i], name); !ok {
					continue
				}
				rel := join(d, name)
				if last {
					c.add(rel)
					n++
				} else {
					next = append(next, rel)
				}
			}
		}
		dirs = next
	}
	return n, why
}

// whyNotDir explains err, the failure to open rel as a directory, from an
// O_PATH fd of rel itself (an open that follows nothing and opens nothing).
func (c *collector) whyNotDir(rel string, err error) string {
	if !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.ELOOP) {
		return describeOpenErr(err, false)
	}
	fd, perr := c.open(rel, unix.O_PATH|unix.O_NOFOLLOW)
	if perr != nil {
		return describeOpenErr(perr, true)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return describeType(st.Mode)
	}
	return "not a directory"
}

func (c *collector) add(p string) {
	if !c.seen[p] {
		c.seen[p] = true
		c.matches = append(c.matches, p)
	}
}

// list returns the names in directory rel ("" is the root), read through a
// directory fd opened beneath the root. "." and ".." are left out: a
// pattern such as ".*" must never reach them.
func (c *collector) list(rel string) ([]string, error) {
	if rel == "" {
		rel = "."
	}
	fd, err := c.open(rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW)
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(fd), rel)
	defer d.Close()
	names, err := d.Readdirnames(-1) // getdents64 on the fd; never "." or ".."
	if err != nil {
		return nil, err
	}
	return names, nil
}

// read collects one file. maxBytes is the per-file limit, remaining what is
// left of the total; a file that does not fit in remaining gets errTotal.
func (c *collector) read(rel string, maxBytes, remaining int64) CollectedFile {
	f := CollectedFile{Path: rel}
	// The type first, from an O_PATH fd: that opens nothing, so a FIFO
	// cannot block and a device is not touched. With O_PATH|O_NOFOLLOW a
	// final symlink is returned as itself, so ELOOP here means a symlink
	// on the way.
	pfd, err := c.open(rel, unix.O_PATH|unix.O_NOFOLLOW)
	if err != nil {
		f.Error = describeOpenErr(err, true)
		return f
	}
	var pst unix.Stat_t
	err = unix.Fstat(pfd, &pst)
	unix.Close(pfd)
	if err != nil {
		f.Error = "fstat: " + err.Error()
		return f
	}
	if pst.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Error = "not a regular file (" + describeType(pst.Mode) + ")"
		return f
	}

	fd, err := c.open(rel, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		// It was a regular file an instant ago: it has been replaced.
		f.Error = "not collected: it was replaced while being collected (" + describeOpenErr(err, true) + ")"
		return f
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Error = "fstat: " + err.Error()
		return f
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Dev != pst.Dev || st.Ino != pst.Ino {
		f.Error = "not collected: it was replaced while being collected"
		return f
	}
	f.Size = st.Size
	if st.Size > maxBytes {
		f.Error = fmt.Sprintf("larger than the %d-byte limit", maxBytes)
		return f
	}
	if st.Size > remaining {
		f.Error = errTotal
		return f
	}
	b, err := readAtMost(fd, st.Size, maxBytes)
	switch {
	case err != nil:
		f.Error = "read: " + err.Error()
	case int64(len(b)) > maxBytes: // grew after the fstat
		f.Size = int64(len(b))
		f.Error = fmt.Sprintf("larger than the %d-byte limit", maxBytes)
	case int64(len(b)) > remaining:
		f.Size = int64(len(b))
		f.Error = errTotal
	default:
		f.Size = int64(len(b))
		f.Content = b
	}
	return f
}

// readAtMost reads fd to its end or to limit+1 bytes, whichever comes
// first; sizeHint (from fstat of fd) sizes the buffer so that the usual
// case is one allocation and two reads.
func readAtMost(fd int, sizeHint, limit int64) ([]byte, error) {
	buf := make([]byte, 0, min(max(sizeHint, 0), limit)+1)
	for int64(len(buf)) <= limit {
		if len(buf) == cap(buf) {
			grow := min(int64(cap(buf)), limit+1-int64(len(buf)))
			buf = append(buf, make([]byte, grow)...)[:len(buf)]
		}
		end := min(int64(cap(buf)), limit+1)
		n, err := unix.Read(fd, buf[len(buf):end])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	return buf, nil
}

// describeOpenErr says why an openat2 under resolveBeneath failed, in the
// words of the result. final: the error is about a file (an O_PATH open,
// where a final symlink does not fail), not a directory being listed.
func describeOpenErr(err error, final bool) string {
	switch {
	case errors.Is(err, unix.ENOENT):
		return "no such file"
	case errors.Is(err, unix.ELOOP) && final:
		return "not collected: a directory on its path is a symbolic link, not followed"
	case errors.Is(err, unix.ELOOP):
		return "a symbolic link, not followed"
	case errors.Is(err, unix.ENOTDIR) && final:
		return "no such file (a parent on its path is not a directory)"
	case errors.Is(err, unix.ENOTDIR):
		return "not a directory"
	case errors.Is(err, unix.EXDEV):
		return "not collected: the path crosses a mount point, not followed"
	case errors.Is(err, unix.EAGAIN):
		return "not collected: the directory kept changing while being collected"
	case errors.Is(err, unix.EACCES):
		return "permission denied"
	case errors.Is(err, unix.ENAMETOOLONG):
		return "the path is too long"
	}
	return "open: " + err.Error()
}

func describeType(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return "a symbolic link, not followed"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	}
	return fmt.Sprintf("file type %#o", mode&unix.S_IFMT)
}

func hasMeta(el string) bool { return strings.ContainsAny(el, `*?[\`) }

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
