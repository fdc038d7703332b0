package daemon

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentjail/internal/systest"
	"agentjail/nsjail"
)

// These tests run the harness on the host, without a jail: python3 -I -u on
// the entry in a temporary directory laid out like /code (passed as the
// harness's one argument, which only tests give), a pipe as fd 3.

const python = nsjail.DefaultPython

var (
	repeated = regexp.MustCompile(`repeated \d+ more`)
	update   = flag.Bool("update", false, "rebuild harness/harness.bin")
)

// run is what one python3 process did.
type run struct {
	stdout, stderr string
	jail           *nsjail.Result // status, exit code and signal only
	report         []byte
	truncated      bool
}

// layout writes what HarnessProgram returns into a new directory standing for /code.
func layout(t *testing.T, code []byte, tests *Tests) string {
	t.Helper()
	dir := t.TempDir()
	program, name, files := HarnessProgram(code, tests)
	files = append(files, nsjail.File{Path: name, Content: program})
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Path), f.Content, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runHarness runs the harness on code (and tests) and reads its report.
func runHarness(t *testing.T, code string, tests *Tests, stdin string) *run {
	t.Helper()
	dir := layout(t, []byte(code), tests)
	return runPython(t, []string{filepath.Join(dir, harnessName), dir}, stdin, true)
}

// runPlain runs main.py of dir the way the jail would without a harness.
func runPlain(t *testing.T, dir, stdin string) *run {
	t.Helper()
	return runPython(t, []string{filepath.Join(dir, mainName)}, stdin, false)
}

func runPython(t *testing.T, args []string, stdin string, channel bool) *run {
	t.Helper()
	systest.Require(t, systest.Python)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, append([]string{"-I", "-u"}, args...)...)
	ws := t.TempDir()
	cmd.Dir = ws
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + ws, "LANG=C.UTF-8"}
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	r := &run{}
	var done chan struct{}
	if channel {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer pr.Close()
		cmd.ExtraFiles = []*os.File{pw} // fd 3
		done = make(chan struct{})
		go func() {
			defer close(done)
			b, _ := io.ReadAll(io.LimitReader(pr, MaxReportBytes))
			r.report = b
			n, _ := io.Copy(io.Discard, pr)
			r.truncated = n > 0
		}()
		err = cmd.Start()
		pw.Close()
		if err != nil {
			t.Fatal(err)
		}
	} else if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if done != nil {
		<-done
	}
	if ctx.Err() != nil {
		t.Fatalf("python did not end: %v", ctx.Err())
	}
	r.stdout, r.stderr = stdout.String(), stderr.String()
	r.jail = &nsjail.Result{Status: nsjail.StatusOK}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			r.jail.Status, r.jail.Signal, r.jail.ExitCode = nsjail.StatusSignaled, ws.Signal(), 128+int(ws.Signal())
		} else {
			r.jail.Status, r.jail.ExitCode = nsjail.StatusError, ws.ExitStatus()
		}
	case err != nil:
		t.Fatal(err)
	}
	return r
}

// The corpus: ordinary programs behave under the harness exactly as under
// plain python3 -I -u: same stdout, stderr and exit status.
func TestHarnessCorpusSameAsPlainPython(t *testing.T) {
	systest.Require(t, systest.Python)
	progs, err := filepath.Glob("testdata/harness/corpus/*.py")
	if err != nil || len(progs) < 30 {
		t.Fatalf("corpus: %v, %d programs", err, len(progs))
	}
	for _, p := range progs {
		name := strings.TrimSuffix(filepath.Base(p), ".py")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			stdin, _ := os.ReadFile(strings.TrimSuffix(p, ".py") + ".stdin")
			dir := layout(t, code, nil)
			h := runPython(t, []string{filepath.Join(dir, harnessName), dir}, string(stdin), true)
			plain := runPlain(t, dir, string(stdin))
			if h.stdout != plain.stdout {
				t.Errorf("stdout differs\nharness:\n%s\nplain:\n%s", h.stdout, plain.stdout)
			}
			printed := h.stderr
			if name == "recursion" { // the harness's frames take 5 levels of the recursion limit (harness.go)
				h.stderr = repeated.ReplaceAllString(h.stderr, "repeated N more")
				plain.stderr = repeated.ReplaceAllString(plain.stderr, "repeated N more")
			}
			if h.stderr != plain.stderr {
				t.Errorf("stderr differs\nharness:\n%s\nplain:\n%s", h.stderr, plain.stderr)
			}
			if h.jail.Status != plain.jail.Status || h.jail.ExitCode != plain.jail.ExitCode || h.jail.Signal != plain.jail.Signal {
				t.Errorf("exit differs: harness %+v, plain %+v", *h.jail, *plain.jail)
			}
			rep := ParseReport(h.report, h.truncated, nil)
			if e := rep.UncaughtException(h.jail); e != nil && !strings.HasPrefix(name, "excepthook") && !strings.Contains(printed, e.Traceback) {
				t.Errorf("the reported traceback is not the one printed:\n%s", e.Traceback)
			}
			if strings.Contains(h.stderr, harnessName) || strings.Contains(h.stderr, harnessLibName) {
				t.Errorf("the harness shows in stderr:\n%s", h.stderr)
			}
		})
	}
}

// harness.bin must be the code of the sources, compiled by this python.
func TestEmbeddedHarnessCodeIsCurrent(t *testing.T) {
	systest.Require(t, systest.Python)
	mode := "check"
	if *update {
		mode = "build"
	}
	out, err := exec.Command(python, "-I", "testdata/harness/compile.py", mode, "harness", "harness/harness.bin").CombinedOutput()
	if err != nil {
		t.Fatalf("%s%v\nrun: go test ./daemon -run TestEmbeddedHarnessCodeIsCurrent -update", out, err)
	}
}
