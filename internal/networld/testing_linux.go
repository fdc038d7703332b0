package networld

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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

// Binary is the agentjail binary the tests run: $AGENTJAIL_BIN; else the
// tree's bin/agentjail when it is newer than every Go, C and Python file
// of the tree (scripts/test and scripts/vmtest build it first); else one
// built once by scripts/build into $TMPDIR/agentjail-networld-HASH (one
// per tree, kept for the next run).
func Binary(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("AGENTJAIL_BIN"); b != "" {
		return b
	}
	binOnce.Do(func() {
		root, err := filepath.Abs("../..")
		if err != nil {
			binErr = err
			return
		}
		if p := filepath.Join(root, "bin", "agentjail"); fresh(root, p) {
			binPath = p
			return
		}
		// One place per tree, replaced atomically: runs of this package
		// from two trees at once do not share a binary.
		sum := sha256.Sum256([]byte(root))
		dir := filepath.Join(os.TempDir(), "agentjail-networld-"+hex.EncodeToString(sum[:6]))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "agentjail")
		tmp := fmt.Sprintf("%s.%d", binPath, os.Getpid())
		if out, err := exec.Command(filepath.Join(root, "scripts/build"), tmp).CombinedOutput(); err != nil {
			binErr = &buildError{string(out), err}
			return
		}
		binErr = os.Rename(tmp, binPath)
	})
	if binErr != nil {
		t.Fatalf("building agentjail with scripts/build: %v", binErr)
	}
	return binPath
}

// fresh says whether bin exists and is newer than every source file
// below root.
func fresh(root, bin string) bool {
	st, err := os.Stat(bin)
	if err != nil {
		return false
	}
	newer := false
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || newer {
			return filepath.SkipDir
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, "_test.go") || strings.Contains(p, "/testdata/") {
			return nil // not in the binary
		}
		switch filepath.Ext(p) {
		case ".go", ".c", ".h", ".py", ".mod", ".sum":
			if i, err := d.Info(); err == nil && i.ModTime().After(st.ModTime()) {
				newer = true
			}
		}
		return nil
	})
	return !newer
}

type buildError struct {
	out string
	err error
}

func (b *buildError) Error() string { return b.err.Error() + ": " + b.out }
