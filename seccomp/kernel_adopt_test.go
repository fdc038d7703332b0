//go:build linux

package seccomp

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"agentjail/internal/systest"
)

// TestKernelAdoptTail loads the filter of a warm run's init into a real
// kernel and makes, under it, the calls its tail makes, through the same
// C library functions (testdata/adopt_tail.c): each must work, and calls
// outside AdoptCalls must fail with ENOSYS. The warm suite of nsjail runs
// the init's own code under it; this shows the paths a run seldom takes
// (a large malloc, the heap trimmed, an error sent) work too.
func TestKernelAdoptTail(t *testing.T) {
	systest.Require(t, systest.CC)
	dir := t.TempDir()
	bin, filter := filepath.Join(dir, "adopt_tail"), filepath.Join(dir, "adopt.bpf")
	if out, err := exec.Command("gcc", "-O1", "-Wall", "-Werror", "-o", bin, "testdata/adopt_tail.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	if err := os.WriteFile(filter, AdoptProgramBytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, filter)
	cmd.WaitDelay = 5 * time.Second // should a child outlive it with the output pipe
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	t.Logf("%s", out)
}
