package nsjail

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// attacksFilesystem is attackCases' group F: filesystem escape.
func attacksFilesystem() []attack {
	return []attack{
		{
			id: "F01_read_host_secrets",
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				for _, p := range []string{"/etc/shadow", "/etc/sudoers", "/root/.ssh/id_rsa", "/root/.bash_history", "/home",
					"/var/lib", "/run/secrets", "/etc/agentjail/config.toml", "/var/log", "/boot"} {
					out.expect(t, "F01 "+p, "", "ENOENT")
				}
				out.expect(t, "F01 canary", "", "ENOENT")
			},
		},
		{
			id: "F02_write_outside_workdir",
			host: func(t *testing.T, e *attackEnv) func(*testing.T, *Result) {
				osPy := fileHash("/usr/lib/python3.11/os.py")
				return func(t *testing.T, res *Result) {
					assert.Equal(t, osPy, fileHash("/usr/lib/python3.11/os.py"), "the runtime's os.py changed")
					for _, p := range []string{"/usr/x", "/x", "/etc/x"} {
						_, err := os.Lstat(p)
						assert.True(t, os.IsNotExist(err), "host %s exists", p)
					}
				}
			},
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				lines := out.all("F02")
				require.Len(t, lines, 7)
				for _, l := range lines {
					f := strings.Fields(l)
					assert.Contains(t, []string{"EROFS", "EACCES", "ENOENT"}, f[len(f)-1], "%s", l)
					if strings.HasSuffix(f[1], "/sitecustomize.py") {
						_, err := os.Lstat(f[1])
						assert.True(t, os.IsNotExist(err), "host %s exists", f[1])
					}
				}
			},
		},
		{id: "F03_cross_job_persistence", run: runF03},
		{id: "F04_symlink_exfiltration_artefacts", run: runF04},
		{
			id: "F07_overwrite_running_binary",
			host: func(t *testing.T, e *attackEnv) func(*testing.T, *Result) {
				py := fileHash("/usr/bin/python3.11")
				return func(t *testing.T, res *Result) {
					assert.Equal(t, py, fileHash("/usr/bin/python3.11"), "the host's python3 changed")
				}
			},
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				writeErrs := []string{"ETXTBSY", "EROFS", "EACCES"}
				for _, p := range []string{"/proc/self/exe", "/proc/1/exe"} {
					f := strings.Fields(out.line(t, "F07 "+p))
					require.Len(t, f, 3, "F07 %s", p)
					// python3's exe is the read-only /usr bind, never a
					// writable host path; the jail's init (PID 1) is not
					// dumpable, so its exe cannot even be read.
					if strings.HasPrefix(f[0], "OK:") {
						assert.Regexp(t, `^OK:'/usr/bin/python3[.0-9]*'$`, f[0])
					} else {
						assert.Equal(t, "EACCES", f[0])
					}
					assert.Contains(t, writeErrs, f[1], "O_WRONLY open of %s", p)
					assert.Contains(t, writeErrs, f[2], "O_RDWR|O_APPEND open of %s", p)
					out.expect(t, "F07 O_PATH-reopen "+p, "", writeErrs...)
				}
			},
		},
		{
			id: "F08_hunt_daemon_binary_in_proc",
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				lines := out.all("F08")
				// The jail's init (PID 1) is the re-exec'd binary: not
				// dumpable, so its exe cannot be read, and its command line
				// is a fixed name that holds no path or secret.
				assert.Equal(t, []string{
					"F08 1 EACCES OK:b'agentjail-init\\x00'",
					"F08 2 OK:'/usr/bin/python3.11' OK:b'/usr/bin/python3\\x00-I\\x00-u\\x00/code/main.py\\x00'",
				}, lines, "only the jail's own processes are visible")
				self, _ := os.Executable()
				assert.NotContains(t, string(res.Stdout), self, "the daemon binary's host path is visible")
			},
		},
		{
			id: "F11_sys_and_cgroupfs",
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				assert.Equal(t, "ENOENT ENOENT", out.line(t, "F11 ls"), "no /sys")
				out.expect(t, "F11 w /sys/fs/cgroup/cgroup.procs", "", "ENOENT", "EROFS", "EACCES")
				out.expect(t, "F11 w /sys/kernel/uevent_helper", "", "ENOENT", "EROFS", "EACCES")
			},
		},
		{
			id: "F12_kernel_knobs_proc",
			host: func(t *testing.T, e *attackEnv) func(*testing.T, *Result) {
				core := readOrErr("/proc/sys/kernel/core_pattern")
				return func(t *testing.T, res *Result) {
					assert.Equal(t, core, readOrErr("/proc/sys/kernel/core_pattern"), "host core_pattern changed")
				}
			},
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				for _, p := range []string{"/proc/sys/kernel/core_pattern", "/proc/sysrq-trigger", "/proc/sys/kernel/modprobe"} {
					if out.expect(t, "F12 "+p, "", "EROFS", "EACCES", "ENOENT") == "ENOENT" {
						if _, err := os.Stat(p); os.IsNotExist(err) {
							// e.g. no CONFIG_MAGIC_SYSRQ or CONFIG_MODULES: the
							// knob does not exist on this kernel, so the probe
							// cannot show the read-only bind; /proc/sys as a
							// whole is shown read-only by core_pattern.
							t.Logf("%s does not exist on this host's kernel: probe not conclusive here", p)
						}
					}
				}
			},
		},
		{
			id: "F13_dev_access_and_mknod",
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				// docs/security.md: null zero full random urandom and the fd
				// links. agentjail adds /dev/shm, a bind of the job's own
				// scratch tmpfs (nosuid,nodev, inside tmp_bytes), and the
				// jail's own devpts (/dev/pts, /dev/ptmx: TestJailPtys).
				assert.Equal(t, "['fd', 'full', 'null', 'ptmx', 'pts', 'random', 'shm', 'stderr', 'stdin', 'stdout', 'urandom', 'zero']", out.line(t, "F13 ls"))
				for _, d := range []string{"/dev/mem", "/dev/kmsg", "/dev/port", "/dev/sda", "/dev/vda", "/dev/nvme0n1", "/dev/console",
					"/dev/fuse", "/dev/net/tun", "/dev/kvm", "/dev/nvidia0", "/dev/nvidiactl"} {
					out.expect(t, "F13 "+d, "", "ENOENT", "EACCES", "EPERM")
				}
				out.expect(t, "F13 /dev/tty", "", "ENXIO", "ENOENT")
				out.expect(t, "F13 mknod", "", "EPERM")
				// agentjail's filter forbids device nodes in mknod/mknodat
				// (stricter than relying on CAP_MKNOD) and reports it.
				calls := seccompCalls(res)
				assert.Positive(t, calls["mknod"]+calls["mknodat"], "the seccomp report does not name mknod(at): %v", calls)
			},
		},
		{
			id: "F14_mount_and_new_mount_api",
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				out.expect(t, "F14 mount-tmpfs", "", "EPERM")
				out.expect(t, "F14 bind-root", "", "EPERM")
				out.expect(t, "F14 umount2", "", "EPERM")
				out.expect(t, "F14 fsopen", "", "EPERM", "ENOSYS")
				out.expect(t, "F14 fsopen", "open_tree", "EPERM", "ENOSYS")
				out.expect(t, "F14 fsopen", "move_mount", "EPERM", "ENOSYS")
				reported(t, res, "mount", "umount2", "fsopen", "open_tree", "move_mount")
			},
		},
		{
			id: "F15_chroot_escape",
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				out.expect(t, "F15", "", "EPERM")
				listing := out.line(t, "F15")
				for _, d := range hostTopLevel(t) {
					assert.NotContains(t, listing, "'"+d+"'", "the listing shows the host's /%s", d)
				}
				assert.Contains(t, listing, "'code'", "the jail's own root")
				reported(t, res, "chroot")
			},
		},
		{
			id: "F16_open_by_handle_at",
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				// Informational in docs/security.md; agentjail forbids it too.
				t.Logf("name_to_handle_at: %s", out.result(t, "F16 name_to_handle_at", ""))
				out.expect(t, "F16 open_by_handle_at", "", "EPERM")
				reported(t, res, "open_by_handle_at", "name_to_handle_at")
			},
		},
		{
			id: "F18_exec_from_writable_storage",
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				// The scratch space is not noexec by default
				// (jail.scratch_noexec): the setuid script runs, with
				// exactly the program's identity (nosuid, one uid).
				assert.Regexp(t, `^OK:CompletedProcess\(.*returncode=0`, out.line(t, "F18 exec-tmp"))
				assert.Equal(t, out.line(t, "F18 self-P01"), out.line(t, "F18 tmp-P01"), "the script run from /tmp is less restricted")
				memfd := out.result(t, "F18 memfd", "")
				t.Logf("memfd exec (allowed by policy; not an escape): %s", memfd)
				if strings.HasPrefix(memfd, "OK:") {
					// The new process runs with the same restrictions.
					assert.Equal(t, out.line(t, "F18 self-P01"), out.line(t, "F18 memfd-P01"), "the memfd-executed process is less restricted")
				}
			},
		},
	}
}
