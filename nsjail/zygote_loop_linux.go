package nsjail

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"agentjail/nsjail/internal/wire"
)

// The zygotes' fork loop, when zygoteloop/build made it before this
// binary was built (zygoteloop/README.md), and the digest of the C it was
// built from.
//
//go:embed zygoteloop
var zygoteLoopDir embed.FS

const (
	zygoteLoopPath    = "zygoteloop/agentjail_zygote_loop.so"
	zygoteLoopSources = zygoteLoopPath + ".sources"
	// zygoteLoopName is the loop's file under a zygote's /code.
	zygoteLoopName = "agentjail_zygote_loop.so"
)

// ZygoteLoop returns the zygotes' fork loop this binary holds (a shared
// object that each zygote loads and serves its forks from, with no
// python run between two forks: Runner.ZygoteLoop), or why it holds none
// that is current. Checked once per process.
func ZygoteLoop() ([]byte, error) { return zygoteLoop() }

var zygoteLoop = sync.OnceValues(func() ([]byte, error) {
	so, err := zygoteLoopDir.ReadFile(zygoteLoopPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errors.New("this binary holds no zygote loop: build it with scripts/build (which runs nsjail/zygoteloop/build)")
	} else if err != nil {
		return nil, err
	}
	want, err := zygoteLoopDir.ReadFile(zygoteLoopSources)
	if err != nil {
		return nil, fmt.Errorf("the zygote loop's digest: %w", err)
	}
	dir, _ := fs.Sub(zygoteLoopDir, "zygoteloop")
	got, err := wire.Digest(wire.DigestFile{FS: dir, Name: "loop.c"}, wire.DigestFile{FS: dir, Name: "build"})
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(string(want)) != got {
		return nil, errors.New("the embedded zygote loop was built from another loop.c than this binary's: rebuild with scripts/build")
	}
	return so, nil
})
