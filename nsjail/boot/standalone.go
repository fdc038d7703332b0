//go:build linux && cgo

package boot

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"agentjail/nsjail/internal/wire"
)

// The standalone init and the digest of the C it was built from, when
// standalone/build made them before this binary was built
// (standalone/README.md); the C of this package, to check that digest.
var (
	//go:embed standalone
	standaloneDir embed.FS
	//go:embed *.c *.h
	sources embed.FS
)

const (
	standalonePath    = "standalone/agentjail-init"
	standaloneSources = standalonePath + ".sources"
	standaloneMain    = "standalone/main.c"
	standaloneBuild   = "standalone/build"
)

func init() { wire.StandaloneInit = standaloneInit }

// standaloneInit opens the embedded standalone init, if there is one
// and it was built from this package's C and build script as they are in
// this binary. The digest is checked once per process; nothing is kept
// (the file reads from the binary's own read-only data).
func standaloneInit() (fs.File, error) {
	if err := standaloneCurrent(); err != nil {
		return nil, err
	}
	return standaloneDir.Open(standalonePath)
}

var standaloneCurrent = sync.OnceValue(func() error {
	if _, err := fs.Stat(standaloneDir, standalonePath); errors.Is(err, fs.ErrNotExist) {
		return errors.New("this binary holds no standalone init: build it with scripts/build (which runs nsjail/boot/standalone/build)")
	} else if err != nil {
		return err
	}
	want, err := standaloneDir.ReadFile(standaloneSources)
	if err != nil {
		return fmt.Errorf("the standalone init's digest: %w", err)
	}
	got, err := sourcesDigest()
	if err != nil {
		return err
	}
	return checkDigest(want, got)
})

// checkDigest compares the digest written beside the standalone init
// (want) with the one of this binary's C (got).
func checkDigest(want []byte, got string) error {
	if strings.TrimSpace(string(want)) != got {
		return errors.New("the embedded standalone init was built from other C than this binary's: rebuild with scripts/build")
	}
	return nil
}

// sourcesDigest is standalone/build's digest (wire.Digest) of the C and
// of how it is built: `sha256sum *.c *.h standalone/main.c
// standalone/build`, names in byte order.
func sourcesDigest() (string, error) {
	var files []wire.DigestFile
	for _, ext := range []string{"*.c", "*.h"} {
		names, err := fs.Glob(sources, ext) // sorted, as sha256sum's glob under LC_ALL=C
		if err != nil {
			return "", err
		}
		for _, n := range names {
			files = append(files, wire.DigestFile{FS: sources, Name: n})
		}
	}
	files = append(files, wire.DigestFile{FS: standaloneDir, Name: standaloneMain},
		wire.DigestFile{FS: standaloneDir, Name: standaloneBuild})
	return wire.Digest(files...)
}
