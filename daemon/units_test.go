package daemon

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

// Tests of scripts/packaging/agentjail.service, scripts/packaging/agentjail.socket and
// scripts/install. They never touch the running system: the install script
// always gets --prefix, and the service's sandbox is emulated in a mount
// namespace of the test's own.

const (
	serviceFile = "../scripts/packaging/agentjail.service"
	socketFile  = "../scripts/packaging/agentjail.socket"
)

// requireTool skips (or, under AGENTJAIL_REQUIRE_ALL=1, fails) a test that
// needs a program the host lacks. (systest.Need covers kernel features.)
func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("AGENTJAIL_REQUIRE_ALL") == "1" {
			t.Fatalf("needs %s: %v (AGENTJAIL_REQUIRE_ALL=1; Debian package systemd or util-linux)", name, err)
		}
		t.Skipf("needs %s: %v", name, err)
	}
	return p
}

// unitSettings reads one section of a unit file: key -> values in order
// (a key may be given several times).
func unitSettings(t *testing.T, file, section string) map[string][]string {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	out := map[string][]string{}
	cur := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			cur = strings.Trim(line, "[]")
		case cur == section:
			k, v, ok := strings.Cut(line, "=")
			require.True(t, ok, "%s: %q", file, line)
			out[k] = append(out[k], v)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// systemd-analyze verify accepts both units. verify exits 0 even for an
// unknown key or a bad value and only prints them, so any output fails.
func TestUnitsVerify(t *testing.T) {
	analyze := requireTool(t, "systemd-analyze")
	dir := t.TempDir()
	// verify checks that ExecStart's binary exists: point it at a stand-in.
	fake := filepath.Join(dir, "agentjail")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	svc, err := os.ReadFile(serviceFile)
	require.NoError(t, err)
	require.Contains(t, string(svc), "ExecStart=/usr/local/bin/agentjail ")
	sock, err := os.ReadFile(socketFile)
	require.NoError(t, err)

	verify := func(service []byte) string {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "agentjail.service"), service, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "agentjail.socket"), sock, 0o644))
		cmd := exec.Command(analyze, "verify", "--man=no", "agentjail.socket", "agentjail.service")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "exit: " + err.Error() + "\n" + string(out)
		}
		return string(out)
	}
	ours := bytes.Replace(svc, []byte("/usr/local/bin/agentjail"), []byte(fake), 1)
	assert.Empty(t, verify(ours), "systemd-analyze verify")

	// The check can fail: a misspelt key and a bad value are reported.
	broken := bytes.Replace(ours, []byte("\nKillMode=mixed"), []byte("\nKillMode=mixd\nProtectSytem=strict"), 1)
	out := verify(broken)
	assert.Contains(t, out, "mixd")
	assert.Contains(t, out, "ProtectSytem")
}

// The unit keeps the settings that the daemon's design needs, and none of
// the sandboxing options that break jails or hide their forbidden system
// calls (agentjail.service explains each).
func TestServiceSettings(t *testing.T) {
	s := unitSettings(t, serviceFile, "Service")
	one := func(k string) string {
		t.Helper()
		require.Len(t, s[k], 1, k)
		return s[k][0]
	}
	assert.Equal(t, "notify", one("Type"))
	assert.Equal(t, "/usr/local/bin/agentjail serve --config "+DefaultConfigPath, one("ExecStart"))
	assert.Equal(t, "yes", one("Delegate"))
	assert.Equal(t, "mixed", one("KillMode"), "SIGTERM to the daemon alone: it ends its jails with kill_reason shutdown")
	assert.Equal(t, "on-failure", one("Restart"))
	assert.Equal(t, "agentjail", one("RuntimeDirectory"))
	assert.Equal(t, defaultSocketPath, "/run/"+one("RuntimeDirectory")+"/agentjail.sock")
	assert.Equal(t, "yes", one("RuntimeDirectoryPreserve"), "stopping the service must not unlink agentjail.socket's socket")
	assert.Equal(t, "yes", one("NoNewPrivileges"))
	assert.Equal(t, "strict", one("ProtectSystem"))
	assert.Equal(t, "CAP_CHOWN CAP_SETUID CAP_SETGID CAP_KILL", one("CapabilityBoundingSet"))
	stop, err := time.ParseDuration(one("TimeoutStopSec"))
	require.NoError(t, err)
	assert.Greater(t, stop, time.Duration(DefaultConfig().Admission.ShutdownGrace)+10*time.Second,
		"systemd's SIGKILL must come well after the shutdown grace")

	for _, k := range []string{
		"SystemCallFilter", "SystemCallArchitectures", "RestrictAddressFamilies", "RestrictNamespaces",
		"RestrictRealtime", "RestrictSUIDSGID", "LockPersonality", "MemoryDenyWriteExecute",
		"ProtectClock", "ProtectHostname", "ProtectKernelModules", "ProtectKernelLogs",
		"ProtectKernelTunables", "PrivateDevices", "ProcSubset", "ProtectControlGroups", "PrivateUsers",
		"UMask", "IPAddressDeny", "User", "DynamicUser", "OOMScoreAdjust",
	} {
		assert.NotContains(t, s, k, "agentjail.service must not set %s", k)
	}

	u := unitSettings(t, serviceFile, "Unit")
	assert.Equal(t, []string{"agentjail.socket"}, u["Requires"])
	assert.Equal(t, []string{"agentjail.socket"}, u["After"])

	k := unitSettings(t, socketFile, "Socket")
	assert.Equal(t, []string{defaultSocketPath}, k["ListenStream"])
	assert.Equal(t, []string{DefaultConfig().Socket.Mode}, k["SocketMode"])
	assert.Equal(t, []string{"agentjail.service"}, k["Service"])
	assert.NotContains(t, k, "Accept", "one daemon serves every connection")
}

// buildAgentjail builds the command into dir with scripts/build.
func buildAgentjail(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "agentjail")
	cmd := exec.Command("scripts/build", out)
	cmd.Dir = ".."
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "scripts/build: %s", b)
	// What the README promises of the product build: static (no
	// interpreter, no shared library to find on the host).
	f, err := elf.Open(out)
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "scripts/build made a dynamically linked binary")
	}
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	assert.Empty(t, libs, "shared libraries needed by the built binary")
	return out
}

// setprivCaps turns the unit's CapabilityBoundingSet into setpriv's syntax.
func setprivCaps(caps []string) string {
	s := "-all"
	for _, c := range caps {
		s += ",+" + strings.ToLower(strings.TrimPrefix(c, "CAP_"))
	}
	return s
}

// sandboxScript emulates agentjail.service's sandbox in a new mount, network
// and IPC namespace (unshare -m -n -i): ProtectProc=invisible,
// RuntimeDirectory= (a writable /run/agentjail), ProtectSystem=strict (/
// read-only), ProtectHome=yes, then NoNewPrivileges=yes and
// CapabilityBoundingSet= ($CAPS) for the command. $EXTRA runs before the
// read-only remount: the negative cases put one more mount there.
const sandboxScript = `set -e
mount -t proc -o hidepid=invisible proc /proc
mkdir -p /run/agentjail
mount -t tmpfs -o mode=0755 tmpfs /run/agentjail
eval "$EXTRA"
mount -o remount,bind,ro /
mount -t tmpfs tmpfs /home
mount -t tmpfs -o mode=0700 tmpfs /root
exec setpriv --no-new-privs --bounding-set "$CAPS" --inh-caps=-all -- "$@"
`

// The jail works inside agentjail.service's sandbox with exactly the
// unit's capabilities: set-up, the kill paths and the seccomp report (which
// systemd's own seccomp options would have swallowed). Each capability
// listed is needed, and the mounts the unit avoids do break jails.
func TestJailInServiceSandbox(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Seccomp, systest.Python)
	unshare := requireTool(t, "unshare")
	requireTool(t, "setpriv")
	if runtime.GOARCH != "amd64" {
		t.Skip("the seccomp case uses x86_64 system call numbers")
	}
	caps := strings.Fields(unitSettings(t, serviceFile, "Service")["CapabilityBoundingSet"][0])
	sb := sandbox{unshare: unshare, bin: buildAgentjail(t, t.TempDir())}
	sandboxRunsAndKills(t, sb, caps)
	sandboxNeedsEachCap(t, sb, caps)
	sandboxLeftOut(t, sb, caps)
}

// sandboxResult is what TestJailInServiceSandbox reads of a run's JSON.
type sandboxResult struct {
	Status     string `json:"status"`
	KillReason string `json:"kill_reason"`
	Stdout     string `json:"stdout"`
	Seccomp    *struct {
		Syscall string `json:"syscall"`
	} `json:"seccomp"`
}

// sandbox runs bin in the emulated sandbox of agentjail.service.
type sandbox struct{ unshare, bin string }

// run runs `agentjail run --json ARGS` in the sandbox with the
// capabilities capSet, after the shell commands extra: the run's result,
// exit code and output.
func (sb sandbox) run(t *testing.T, capSet []string, extra string, args ...string) (sandboxResult, int, string) {
	t.Helper()
	cmd := exec.Command(sb.unshare, append([]string{"-m", "-n", "-i", "--propagation", "slave", "sh", "-c", sandboxScript, "sandbox", sb.bin, "run", "--json"}, args...)...)
	cmd.Env = append(os.Environ(), "CAPS="+setprivCaps(capSet), "EXTRA="+extra)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	var r sandboxResult
	if code != 125 {
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &r), "stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	return r, code, stdout.String() + stderr.String()
}

// sandboxRunsAndKills: with the unit's capabilities caps a jail runs, its
// limits kill it and its seccomp filter reports or kills.
func sandboxRunsAndKills(t *testing.T, sb sandbox, caps []string) {
	t.Run("works", func(t *testing.T) {
		r, code, out := sb.run(t, caps, "", "-c", `import os, socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(os.getuid(), "lo ok")`)
		require.Equal(t, 0, code, out)
		assert.Equal(t, "ok", r.Status)
		assert.Equal(t, "1000 lo ok\n", r.Stdout)
	})
	t.Run("memory kill", func(t *testing.T) {
		r, code, out := sb.run(t, caps, "", "--memory", "32MiB", "-c", `x = b"x" * (200 << 20)`)
		assert.Equal(t, 137, code, out)
		assert.Equal(t, "memory_limit", r.KillReason, out)
	})
	t.Run("wall timeout", func(t *testing.T) {
		r, code, out := sb.run(t, caps, "", "--timeout", "300ms", "-c", "import time; time.sleep(30)")
		assert.Equal(t, 137, code, out)
		assert.Equal(t, "wall_timeout", r.KillReason, out)
	})
	t.Run("forbidden call reported", func(t *testing.T) {
		// init_module (175): ProtectKernelModules= would answer EPERM
		// before the jail's filter could report it.
		r, code, out := sb.run(t, caps, "", "-c", "import ctypes; ctypes.CDLL(None).syscall(175, 0, 0, 0)")
		assert.Equal(t, 0, code, out)
		require.NotNil(t, r.Seccomp, out)
		assert.Equal(t, "init_module", r.Seccomp.Syscall)
	})
	t.Run("forbidden call kills", func(t *testing.T) {
		r, code, out := sb.run(t, caps, "", "--on-forbidden-syscall", "kill", "-c", "import ctypes; ctypes.CDLL(None).syscall(175, 0, 0, 0)")
		assert.Equal(t, 137, code, out)
		assert.Equal(t, "seccomp", r.KillReason, out)
	})
}

// sandboxNeedsEachCap: each listed capability is needed: without it the
// jail cannot start.
func sandboxNeedsEachCap(t *testing.T, sb sandbox, caps []string) {
	for _, c := range caps {
		t.Run("without "+c, func(t *testing.T) {
			var fewer []string
			for _, o := range caps {
				if o != c {
					fewer = append(fewer, o)
				}
			}
			_, code, out := sb.run(t, fewer, "", "-c", "pass")
			assert.Equal(t, 125, code, out)
			if c == "CAP_KILL" {
				// Without it no limit could end a jail: refused up front.
				assert.Contains(t, out, "needs CAP_KILL")
			} else {
				assert.Contains(t, out, "operation not permitted")
			}
		})
	}
}

// sandboxLeftOut: what the unit leaves out on purpose, emulated, breaks
// jails.
func sandboxLeftOut(t *testing.T, sb sandbox, caps []string) {
	for _, tc := range []struct{ name, extra, stage string }{
		{"ProtectKernelTunables", "mount --bind /proc/sys /proc/sys; mount -o remount,bind,ro /proc/sys", "mount /proc: operation not permitted"},
		{"ProtectKernelLogs", "mount --bind /dev/null /proc/kmsg", "mount /proc: operation not permitted"},
		{"ProtectKernelModules", "mount -t tmpfs -o ro,mode=000 tmpfs /usr/share", "bind /usr: invalid argument"},
	} {
		t.Run("with "+tc.name, func(t *testing.T) {
			_, code, out := sb.run(t, caps, tc.extra, "-c", "pass")
			assert.Equal(t, 125, code, out)
			assert.Contains(t, out, tc.stage)
		})
	}
}

// scripts/install puts the binary, the units and the default config in
// place below --prefix, never overwrites a config, and is idempotent.
func TestInstallScript(t *testing.T) {
	install, err := filepath.Abs("../scripts/install")
	require.NoError(t, err)
	work := t.TempDir()
	root := filepath.Join(work, "root")
	fakeBin := filepath.Join(work, "agentjail")
	require.NoError(t, os.WriteFile(fakeBin, []byte("#!/bin/sh\necho v1\n"), 0o755))

	runInstall := func(env []string, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(install, args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		}
		require.NoError(t, err)
		return string(out), 0
	}
	same := func(src, dst string, mode os.FileMode) {
		t.Helper()
		want, err := os.ReadFile(src)
		require.NoError(t, err)
		got, err := os.ReadFile(dst)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), dst)
		st, err := os.Stat(dst)
		require.NoError(t, err)
		assert.Equal(t, mode, st.Mode().Perm(), dst)
	}
	binDst := filepath.Join(root, "usr/local/bin/agentjail")
	svcDst := filepath.Join(root, "etc/systemd/system/agentjail.service")
	sockDst := filepath.Join(root, "etc/systemd/system/agentjail.socket")
	confDst := filepath.Join(root, "etc/agentjail/config.toml")

	out, code := runInstall(nil, "--prefix", "root", "--bin", "agentjail") // relative to the caller's directory
	require.Equal(t, 0, code, out)
	same(fakeBin, binDst, 0o755)
	same(serviceFile, svcDst, 0o644)
	same(socketFile, sockDst, 0o644)
	same("../scripts/packaging/config.toml", confDst, 0o644)
	assert.Contains(t, out, "installed  "+confDst)
	assert.Contains(t, out, "skipped    systemctl daemon-reload")
	var files []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, strings.TrimPrefix(p, root))
		}
		return err
	}))
	assert.ElementsMatch(t, []string{"/usr/local/bin/agentjail", "/etc/systemd/system/agentjail.service",
		"/etc/systemd/system/agentjail.socket", "/etc/agentjail/config.toml"}, files, "nothing else, no temporary file left")

	// An operator's config survives; a new binary replaces the old one.
	mine := "# mine\n[log]\nlevel = \"debug\"\n"
	require.NoError(t, os.WriteFile(confDst, []byte(mine), 0o600))
	require.NoError(t, os.Chmod(confDst, 0o600))
	require.NoError(t, os.WriteFile(fakeBin, []byte("#!/bin/sh\necho v2\n"), 0o755))
	out, code = runInstall(nil, "--prefix", root, "--bin", fakeBin)
	require.Equal(t, 0, code, out)
	got, err := os.ReadFile(confDst)
	require.NoError(t, err)
	assert.Equal(t, mine, string(got))
	st, err := os.Stat(confDst)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "its mode too")
	assert.Contains(t, out, "kept       "+confDst)
	assert.Contains(t, out, "installed  "+binDst)
	assert.Contains(t, out, "unchanged  "+svcDst)
	same(fakeBin, binDst, 0o755)

	// Nothing to do the third time.
	out, code = runInstall(nil, "--prefix", root, "--bin", fakeBin)
	require.Equal(t, 0, code, out)
	assert.NotContains(t, out, "installed")
	assert.Equal(t, 3, strings.Count(out, "unchanged  "), out)

	// DESTDIR is --prefix by another name.
	dest := filepath.Join(work, "dest")
	out, code = runInstall([]string{"DESTDIR=" + dest}, "--bin", fakeBin)
	require.Equal(t, 0, code, out)
	same(serviceFile, filepath.Join(dest, "etc/systemd/system/agentjail.service"), 0o644)

	// --enable acts on the running system: never with a prefix.
	out, code = runInstall(nil, "--prefix", root, "--bin", fakeBin, "--enable")
	assert.Equal(t, 2, code, out)
	out, code = runInstall(nil, "--frobnicate")
	assert.Equal(t, 2, code, out)
}
