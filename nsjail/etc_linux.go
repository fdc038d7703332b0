package nsjail

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Bounds of what HostEtc copies: the jail's root file system has 1024
// inodes and is sized for what it holds.
const (
	maxEtcEntries = 512
	maxEtcBytes   = 4 << 20
	maxEtcFile    = 1 << 20
)

// etcTrees are the parts of the host's /etc that libraries of a Python
// runtime read their configuration from: matplotlib's matplotlibrc
// (Debian's python3-matplotlib keeps it there) and fontconfig's
// configuration (fonts.conf and the conf.d links into
// /usr/share/fontconfig). Each is copied when the host has it.
var etcTrees = []string{"matplotlibrc", "fonts"}

// etcHostFiles are single files of the host's /etc that the standard
// library and its users read: service and protocol names
// (getservbyname, getaddrinfo with a service; Debian's netbase), media
// types (mimetypes; media-types), and what TLS verifies with: OpenSSL's
// configuration and the CA bundle (ca-certificates), which Python's ssl
// finds as its default cafile (/usr/lib/ssl/cert.pem links there). The
// hashed links of /etc/ssl/certs are not copied: the bundle holds every
// certificate they name. Each is copied when the host has it.
var etcHostFiles = []string{"services", "protocols", "mime.types", "ssl/openssl.cnf", "ssl/certs/ca-certificates.crt"}

// HostEtc is the /etc a jail with these read-only mounts
// (Spec.ReadOnlyMounts) needs from the host: every link of
// /etc/alternatives that a library or program in its binds (/usr and the
// mounts) resolves through (Debian's BLAS and LAPACK are such links:
// /usr/lib/x86_64-linux-gnu/libblas.so.3 -> /etc/alternatives/...) and
// whose target is inside the binds, and etcTrees. Nothing else of the
// host's /etc enters a jail.
func HostEtc(readOnlyMounts []string) (*Etc, error) {
	return hostEtc("/etc", binds(&Spec{ReadOnlyMounts: readOnlyMounts}))
}

func hostEtc(etc string, binds []string) (*Etc, error) {
	e := &Etc{}
	var bytes int
	add := func(en EtcEntry) error {
		if len(e.Entries) >= maxEtcEntries {
			return fmt.Errorf("the jail's /etc would hold more than %d entries (at %s)", maxEtcEntries, en.Path)
		}
		if bytes += len(en.Content); bytes > maxEtcBytes {
			return fmt.Errorf("the jail's /etc would hold more than %d bytes (at %s)", maxEtcBytes, en.Path)
		}
		e.Entries = append(e.Entries, en)
		return nil
	}
	alts, err := alternativesUsed(etc, binds)
	if err != nil {
		return nil, err
	}
	if len(alts) > 0 {
		if err := add(EtcEntry{Path: "alternatives", Dir: true}); err != nil {
			return nil, err
		}
		for _, a := range alts {
			if err := add(a); err != nil {
				return nil, err
			}
		}
	}
	if err := addHostFiles(etc, add); err != nil {
		return nil, err
	}
	for _, tree := range etcTrees {
		root := filepath.Join(etc, tree)
		if _, err := os.Lstat(root); os.IsNotExist(err) {
			continue
		}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(etc, p)
			switch t := d.Type(); {
			case t.IsDir():
				return add(EtcEntry{Path: rel, Dir: true})
			case t&fs.ModeSymlink != 0:
				target, err := os.Readlink(p)
				if err != nil {
					return err
				}
				return add(EtcEntry{Path: rel, Link: target})
			case t.IsRegular():
				b, err := readSmall(p)
				if err != nil {
					return err
				}
				return add(EtcEntry{Path: rel, Content: b})
			}
			return nil // a socket or device: nothing a library reads
		})
		if err != nil {
			return nil, fmt.Errorf("copying /etc/%s into the jail's /etc: %w", tree, err)
		}
	}
	return e, nil
}

// addHostFiles adds etcHostFiles that the host has, as regular files
// (through links: /etc/ssl/certs/ca-certificates.crt may be one), each
// directory on the way once, before what it holds.
func addHostFiles(etc string, add func(EtcEntry) error) error {
	dirs := map[string]bool{}
	for _, f := range etcHostFiles {
		p := filepath.Join(etc, f)
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			continue // not on this host: the jail goes without, as the host does
		}
		b, err := readSmall(p)
		if err != nil {
			return fmt.Errorf("copying /etc/%s into the jail's /etc: %w", f, err)
		}
		var parents []string
		for d := filepath.Dir(f); d != "."; d = filepath.Dir(d) {
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			if !dirs[d] {
				dirs[d] = true
				if err := add(EtcEntry{Path: d, Dir: true}); err != nil {
					return err
				}
			}
		}
		if err := add(EtcEntry{Path: f, Content: b}); err != nil {
			return err
		}
	}
	return nil
}

// alternativesUsed are the links of etc/alternatives that a symbolic link
// in the binds' program and library directories points at, and whose
// final target is inside the binds (a link to nothing the jail has would
// only say what the host has installed).
func alternativesUsed(etc string, binds []string) ([]EtcEntry, error) {
	prefix := etc + "/alternatives/"
	names := map[string]bool{}
	for _, b := range binds {
		dirs := []string{b, b + "/bin", b + "/sbin", b + "/lib", b + "/lib64"}
		multi, _ := filepath.Glob(b + "/lib/*-linux-gnu")
		for _, d := range append(dirs, multi...) {
			linksInto(d, prefix, names)
		}
	}
	var out []EtcEntry
	for n := range names {
		p := prefix + n
		target, err := os.Readlink(p)
		if err != nil {
			continue // a dangling reference on the host: nothing to give
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil || !slices.ContainsFunc(binds, func(b string) bool { return within(real, b) }) {
			continue
		}
		out = append(out, EtcEntry{Path: "alternatives/" + n, Link: target})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// linksInto adds to names the NAME of each symbolic link of directory d
// whose target is prefix+NAME. Local mode runs it for every jail (a
// daemon once), over about 2,000 entries of /usr: the links are read
// relative to the directory, unsorted, with one buffer.
func linksInto(d, prefix string, names map[string]bool) {
	f, err := os.Open(d)
	if err != nil {
		return // not there: nothing links from it
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return
	}
	buf := make([]byte, len(prefix)+256)
	for _, en := range ents {
		if en.Type()&fs.ModeSymlink == 0 {
			continue
		}
		n, err := unix.Readlinkat(int(f.Fd()), en.Name(), buf)
		if err != nil || n == len(buf) { // cut: longer than any name it could be
			continue
		}
		if t := string(buf[:n]); strings.HasPrefix(t, prefix) && !strings.Contains(t[len(prefix):], "/") {
			names[t[len(prefix):]] = true
		}
	}
}

// readSmall reads a regular file of at most maxEtcFile bytes.
func readSmall(p string) ([]byte, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if st.Size() > maxEtcFile {
		return nil, fmt.Errorf("%s is %d bytes, more than a jail's /etc takes (%d)", p, st.Size(), maxEtcFile)
	}
	return os.ReadFile(p)
}

// bytes is what the entries take in the jail's root file system.
func (e *Etc) bytes() int64 {
	if e == nil {
		return 0
	}
	var n int64
	for _, en := range e.Entries {
		n += int64(len(en.Content)) + 4096 // a page and an inode's worth each
	}
	return n
}
