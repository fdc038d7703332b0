//go:build linux

package seccomp

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	// glibc's, as the init in the binary itself is built; musl's, as the
	// standalone init is (nsjail/boot/standalone/build, with the kernel's headers).
	for _, cc := range []struct {
		name string
		need systest.Need
		args func(dir string) []string
	}{
		{"gcc", systest.CC, func(string) []string { return nil }},
		{"musl-gcc", systest.MuslCC, func(dir string) []string {
			headers := filepath.Join(dir, "include")
			if err := os.Mkdir(headers, 0o755); err != nil {
				t.Fatal(err)
			}
			arch, err := exec.Command("gcc", "-print-multiarch").Output()
			if err != nil {
				t.Fatalf("gcc -print-multiarch: %v", err)
			}
			for link, target := range map[string]string{
				"linux": "/usr/include/linux", "asm-generic": "/usr/include/asm-generic",
				"asm": filepath.Join("/usr/include", strings.TrimSpace(string(arch)), "asm"),
			} {
				if err := os.Symlink(target, filepath.Join(headers, link)); err != nil {
					t.Fatal(err)
				}
			}
			return []string{"-static", "-isystem", headers}
		}},
	} {
		t.Run(cc.name, func(t *testing.T) {
			systest.Require(t, cc.need)
			adoptTail(t, cc.name, cc.args(t.TempDir()))
		})
	}
}

func adoptTail(t *testing.T, cc string, ccArgs []string) {
	dir := t.TempDir()
	bin, filter := filepath.Join(dir, "adopt_tail"), filepath.Join(dir, "adopt.bpf")
	args := append(append([]string{"-O1", "-Wall", "-Werror"}, ccArgs...), "-o", bin, "testdata/adopt_tail.c")
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
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
