package wire

import (
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"strings"
)

// DigestFile is one file of a Digest: its name, as its line gives it,
// in fsys.
type DigestFile struct {
	FS   fs.FS
	Name string
}

// Digest is how the C programs' build scripts (nsjail/boot/standalone/build,
// nsjail/zygoteloop/build) name the sources they built from, for the
// binary that embeds both to check that they agree: the sha256 of
// `sha256sum NAME...`'s output (each file's digest, two spaces, its
// name, a newline), in hex. Each file is hashed as a stream.
func Digest(files ...DigestFile) (string, error) {
	var list strings.Builder
	for _, f := range files {
		r, err := f.FS.Open(f.Name)
		if err != nil {
			return "", err
		}
		h := sha256.New()
		_, err = io.Copy(h, r)
		r.Close()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&list, "%x  %s\n", h.Sum(nil), f.Name)
	}
	return fmt.Sprintf("%x", sha256.Sum256([]byte(list.String()))), nil
}
