//go:build linux && cgo

package boot

import (
	"crypto/sha256"
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

// standaloneInit returns the embedded standalone init, if there is one
// and it was built from this package's C as it is in this binary. Once
// per process: the digest reads about 80 KB.
var standaloneInit = sync.OnceValues(func() ([]byte, error) {
	bin, err := standaloneDir.ReadFile(standalonePath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errors.New("this binary holds no standalone init: build it with scripts/build (which runs nsjail/boot/standalone/build)")
	}
	if err != nil {
		return nil, err
	}
	want, err := standaloneDir.ReadFile(standaloneSources)
	if err != nil {
		return nil, fmt.Errorf("the standalone init's digest: %w", err)
	}
	got, err := sourcesDigest()
	if err != nil {
		return nil, err
	}
	if err := checkDigest(want, got); err != nil {
		return nil, err
	}
	return bin, nil
})

// checkDigest compares the digest written beside the standalone init
// (want) with the one of this binary's C (got).
func checkDigest(want []byte, got string) error {
	if strings.TrimSpace(string(want)) != got {
		return errors.New("the embedded standalone init was built from other C than this binary's: rebuild with scripts/build")
	}
	return nil
}

// sourcesDigest is standalone/build's digest of the C and of how it is
// built: the sha256 of `sha256sum *.c *.h standalone/main.c
// standalone/build`'s output (each file's digest, two spaces, its name, a
// newline; names in byte order).
func sourcesDigest() (string, error) {
	var list strings.Builder
	add := func(fsys fs.FS, name string) error {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(&list, "%x  %s\n", sha256.Sum256(b), name)
		return nil
	}
	for _, ext := range []string{"*.c", "*.h"} {
		names, err := fs.Glob(sources, ext) // sorted, as sha256sum's glob under LC_ALL=C
		if err != nil {
			return "", err
		}
		for _, n := range names {
			if err := add(sources, n); err != nil {
				return "", err
			}
		}
	}
	for _, name := range []string{standaloneMain, standaloneBuild} {
		if err := add(standaloneDir, name); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%x", sha256.Sum256([]byte(list.String()))), nil
}
