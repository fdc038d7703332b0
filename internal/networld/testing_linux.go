package networld

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"agentjail/internal/systest"
)

// New starts a world for t and removes it when t ends, then checks that
// nothing of it is left (its namespaces, a process in them, its link).
func New(t testing.TB) *World {
	t.Helper()
	systest.Require(t, systest.Root, systest.NetNS)
	w, err := Start(t.TempDir())
	if err != nil {
		t.Fatalf("making the test network: %v", err)
	}
	inodes := w.Inodes()
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("removing the test network: %v", err)
		}
		if left := w.Leftovers(inodes); len(left) > 0 {
			t.Errorf("the test network left: %s", strings.Join(left, "; "))
		}
	})
	return w
}

// NewDaemon starts bin serve in w's D for t (see StartDaemon), and stops
// it when t ends; it fails t if the daemon is dead by then (a run took it
// down).
func (w *World) NewDaemon(t testing.TB, bin, config string) *Daemon {
	t.Helper()
	d, err := w.StartDaemon(bin, t.TempDir(), config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !d.Alive() {
			t.Errorf("the daemon died during the test:\n%s", d.Log())
		}
		if err := d.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("daemon log:\n%s", d.Log())
		}
	})
	return d
}

// UIDBase is a random uid base for a test daemon's jails, apart from
// other tests' daemons on the same host.
func UIDBase() uint32 { return 3_300_000_000 + uint32(rand.IntN(900))*100_000 }

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// Binary is the agentjail binary the tests run: $AGENTJAIL_BIN, or one
// built once by scripts/build from the tree that holds this package.
func Binary(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("AGENTJAIL_BIN"); b != "" {
		return b
	}
	binOnce.Do(func() {
		root, err := filepath.Abs("../..")
		if err == nil {
			dir, _ := os.MkdirTemp("", "networld-bin-")
			binPath = filepath.Join(dir, "agentjail")
			out, e := exec.Command(filepath.Join(root, "scripts/build"), binPath).CombinedOutput()
			if e != nil {
				binErr = &buildError{string(out), e}
			}
		} else {
			binErr = err
		}
	})
	if binErr != nil {
		t.Fatalf("building agentjail with scripts/build: %v", binErr)
	}
	return binPath
}

type buildError struct {
	out string
	err error
}

func (b *buildError) Error() string { return b.err.Error() + ": " + b.out }
