package nsjail

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

// scratchExecProgram runs what it writes in the scratch space: a script
// in each of /workspace, /tmp and /dev/shm, one found by shutil.which, a
// venv's console script, and an executable mapping of a file there.
const scratchExecProgram = `import errno, mmap, os, shutil, subprocess, sys
def run(argv):
    try: return subprocess.run(argv, capture_output=True, text=True).stdout.strip() or "(no output)"
    except OSError as e: return type(e).__name__
for d in ("/workspace", "/tmp", "/dev/shm"):
    with open(d + "/t.sh", "w") as f: f.write("#!/bin/sh\necho ran $0\n")
    os.chmod(d + "/t.sh", 0o755)
    print("exec", d, run([d + "/t.sh"]))
print("which", shutil.which("t.sh", path="/workspace"))
subprocess.run([sys.executable, "-m", "venv", "--without-pip", "/workspace/v"], check=True)
with open("/workspace/v/bin/hello", "w") as f: f.write("#!/workspace/v/bin/python\nimport sys\nprint(sys.prefix)\n")
os.chmod("/workspace/v/bin/hello", 0o755)
print("venv", run(["/workspace/v/bin/hello"]))
with open("/workspace/m", "wb") as f: f.write(b"\xc3" * 4096)
fd = os.open("/workspace/m", os.O_RDONLY)
try: mmap.mmap(fd, 4096, prot=mmap.PROT_READ | mmap.PROT_EXEC); print("mmap-exec OK")
except OSError as e: print("mmap-exec", errno.errorcode[e.errno])
`

// A program runs the scripts and venvs it writes (issue 37 item 1):
// the scratch tmpfs is not noexec by default.
func TestScratchRunsWhatTheProgramWrote(t *testing.T) {
	inRunAndSession(t, scratchExecProgram, nil, func(t *testing.T, out string) {
		for _, d := range []string{"/workspace", "/tmp", "/dev/shm"} {
			assert.Contains(t, out, "exec "+d+" ran "+d+"/t.sh\n")
		}
		assert.Contains(t, out, "which /workspace/t.sh\n")
		assert.Contains(t, out, "venv /workspace/v\n")
		assert.Contains(t, out, "mmap-exec OK\n")
	})
}

// Runner.ScratchNoexec (jail.scratch_noexec) keeps the scratch tmpfs
// noexec, for each of its three binds, also once a request resizes it.
func TestScratchNoexecSetting(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python)
	r, err := NewRunner()
	require.NoError(t, err)
	r.ScratchNoexec = true
	t.Cleanup(r.Close)
	for _, tmp := range []int64{DefaultLimits().TmpBytes, 32 << 20} {
		s := &Spec{Program: []byte(scratchExecProgram), Limits: DefaultLimits()}
		s.Limits.TmpBytes = tmp
		res := runIn(t, r, s)
		okRun(t, res)
		out := string(res.Stdout)
		for _, d := range []string{"/workspace", "/tmp", "/dev/shm"} {
			assert.Contains(t, out, "exec "+d+" PermissionError\n", "tmp_bytes %d", tmp)
		}
		assert.Contains(t, out, "which None\n")
		assert.Contains(t, out, "venv PermissionError\n")
		assert.Contains(t, out, "mmap-exec EPERM\n")
	}
}

// staticProbe is testdata/scratch_static.c, built static: a program that
// needs nothing from the jail's /usr.
func staticProbe(t *testing.T) []byte {
	systest.Require(t, systest.CC)
	bin := filepath.Join(t.TempDir(), "static")
	if out, err := exec.Command("gcc", "-static", "-O1", "-Wall", "-Werror", "-o", bin, "testdata/scratch_static.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	b, err := os.ReadFile(bin)
	require.NoError(t, err)
	return b
}

// What noexec used to stand in front of still holds with exec allowed: a
// setuid file written to the scratch space gains nothing (nosuid; the
// jail has one uid), no device node can be made or opened there (nodev,
// and the filter refuses mknod of devices), and a static binary run from
// /workspace is in the jail's namespaces, under its filter, with no
// capability and no way to make namespaces or mounts of its own.
func TestScratchExecKeepsTheJail(t *testing.T) {
	static := staticProbe(t)
	code := `import os, shutil, subprocess
shutil.copy("/workspace/static.bin", "/workspace/suid")
os.chmod("/workspace/suid", 0o6755)
print("mode", oct(os.stat("/workspace/suid").st_mode & 0o7777))
print("python uids", *os.getresuid())
print("python mntns", os.readlink("/proc/self/ns/mnt"))
print("python pidns", os.readlink("/proc/self/ns/pid"))
print(subprocess.run(["/workspace/suid"], capture_output=True, text=True, check=True).stdout)
try: os.mknod("/workspace/null", 0o666 | 0o020000, os.makedev(1, 3)); print("mknod-char OK")
except OSError as e: print("mknod-char", e.errno)
opts = {l.split()[4]: l.split()[5] for l in open("/proc/self/mountinfo")}
print("flags", *(opts[m] for m in ("/workspace", "/tmp", "/dev/shm")))
`
	mod := func(s *Spec) { s.Files = []File{{Path: "static.bin", Content: static}} }
	inRunAndSession(t, code, mod, func(t *testing.T, out string) {
		line := func(key string) string {
			m := regexp.MustCompile(`(?m)^` + key + ` (.*)$`).FindStringSubmatch(out)
			require.NotNil(t, m, "no %q line in:\n%s", key, out)
			return m[1]
		}
		assert.Equal(t, "0o6755", line("mode"), "the setuid bit is set: the case is meaningful")
		assert.Equal(t, line("python uids"), line("uids"), "a setuid binary gains no uid")
		assert.Equal(t, "0000000000000000", line("CapEff"))
		assert.Equal(t, "1", line("NoNewPrivs"))
		assert.Equal(t, "2", line("Seccomp"), "the filter is inherited across exec")
		assert.Equal(t, line("python mntns"), line("mntns"))
		assert.Equal(t, line("python pidns"), line("pidns"))
		assert.Equal(t, "EPERM", line("unshare"))
		assert.Equal(t, "EPERM", line("mount"))
		assert.Equal(t, "EPERM", line("mknod"))
		assert.NotEqual(t, "OK", line("setuid"))
		assert.Equal(t, "1", line("mknod-char"), "EPERM")
		for _, f := range strings.Fields(line("flags")) {
			f = "," + f + ","
			assert.Contains(t, f, ",nosuid,")
			assert.Contains(t, f, ",nodev,")
		}
	})
}
