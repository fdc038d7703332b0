package nsjail

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// attacksNetwork is attackCases' group N: network.
func attacksNetwork() []attack {
	return []attack{
		{
			id: "N01_tcp_to_host_via_loopback",
			host: func(t *testing.T, e *attackEnv) func(*testing.T, *Result) {
				n := e.accepted.Load()
				return func(t *testing.T, res *Result) {
					assert.Equal(t, n, e.accepted.Load(), "the jail reached a host listener")
				}
			},
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				for _, port := range []string{"22", "53", "80", "443", "2375", "2376", "5432", "6379", "8080", "10250"} {
					// lo is up in agentjail: refused, not unreachable.
					out.expect(t, "N01 127.0.0.1 "+port, "", "ECONNREFUSED")
					out.expect(t, "N01 ::1 "+port, "", "ECONNREFUSED", "ENETUNREACH", "EADDRNOTAVAIL")
				}
				out.expect(t, "N01 host-listener", "", "ECONNREFUSED")
			},
		},
		{
			id: "N02_metadata_host_lan",
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				for _, ip := range []string{"169.254.169.254", e.hostIP, "10.0.0.1", "172.17.0.1", "192.168.1.1", "8.8.8.8"} {
					out.expect(t, "N02 "+ip, "", "ENETUNREACH")
				}
				assert.Less(t, res.WallTime, time.Second, "no route: every connect fails at once")
			},
		},
		{
			id: "N03_dns",
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				out.expect(t, "N03 getaddrinfo", "", "gaierror")
				out.expect(t, "N03 resolv.conf", "", "ENOENT")
				out.expect(t, "N03 udp53", "", "ENETUNREACH")
			},
		},
		{
			id: "N04_raw_and_packet_sockets",
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				out.expect(t, "N04 2 3 1", "", "EPERM")
				out.expect(t, "N04 10 3 58", "", "EPERM")
				out.expect(t, "N04 17 3 768", "", "EPERM")
				// Ping sockets are allowed by agentjail's filter; the kernel
				// refuses them unless ping_group_range covers the jail's gid,
				// and if they work they reach only the jail's lo.
				ping := out.result(t, "N04 2 2 1", "")
				assert.True(t, ping == "EACCES" || ping == "EPERM" || strings.HasPrefix(ping, "OK:"), "ping socket: %s", ping)
				reported(t, res, "socket")
			},
		},
		{
			id: "N05_unix_sockets_by_path",
			host: func(t *testing.T, e *attackEnv) func(*testing.T, *Result) {
				t.Setenv("NOTIFY_SOCKET", "/run/systemd/notify")
				n := e.accepted.Load()
				return func(t *testing.T, res *Result) {
					assert.Equal(t, n, e.accepted.Load(), "the jail reached a host listener")
				}
			},
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				for _, p := range []string{e.daemonSock, "/var/run/docker.sock", "/run/containerd/containerd.sock", "/run/systemd/private",
					"/run/systemd/notify", "/run/dbus/system_bus_socket", "/run/user/0/bus", "/dev/log"} {
					out.expect(t, "N05 "+p, "", "ENOENT")
				}
				assert.Equal(t, "None", out.line(t, "N05 NOTIFY_SOCKET"))
				// Abstract sockets belong to the network namespace: nothing
				// listens under that name in the jail's.
				out.expect(t, "N05 abstract", "", "ECONNREFUSED")
			},
		},
		{
			id: "N07_netlink_and_interfaces",
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				ifaces := out.line(t, "N07 ifaces")
				assert.Contains(t, []string{"EAFNOSUPPORT", "OK:[(1, 'lo')]"}, ifaces, "only lo, or netlink refused")
				// agentjail forbids AF_NETLINK (the recommended allowlist);
				// NETLINK_ROUTE, which glibc probes, fails quietly.
				out.expect(t, "N07 netlink 0", "", "EAFNOSUPPORT")
				for _, p := range []string{"4", "9", "12", "15"} {
					out.expect(t, "N07 netlink "+p, "", "EPERM")
				}
				out.expect(t, "N07 SIOCSIFFLAGS", "", "EPERM")
				ifs, _ := net.Interfaces()
				for _, i := range ifs {
					if i.Name != "lo" {
						assert.NotContains(t, string(res.Stdout), "'"+i.Name+"'", "host interface visible")
					}
				}
				reported(t, res, "socket")
			},
		},
	}
}

// attacksLeaks is attackCases' group I: information leaks.
func attacksLeaks() []attack {
	return []attack{
		{
			id: "I01_daemon_environment",
			host: func(t *testing.T, e *attackEnv) func(*testing.T, *Result) {
				for k, v := range map[string]string{"NOTIFY_SOCKET": "/run/systemd/notify", "LISTEN_FDS": "1", "LISTEN_PID": "1",
					"INVOCATION_ID": "0123", "JOURNAL_STREAM": "8:1", "CREDENTIALS_DIRECTORY": "/run/credentials/x",
					"SYSTEMD_EXEC_PID": "1", "AWS_SECRET_ACCESS_KEY": "x", "GOOGLE_APPLICATION_CREDENTIALS": "/x",
					"AZURE_CLIENT_SECRET": "x", "API_TOKEN": "x", "DB_PASSWORD": "x", "AGENTJAIL_CONFIG": "/etc/agentjail/config.toml"} {
					t.Setenv(k, v)
				}
				return nil
			},
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				// agentjail's allowlist: PATH, HOME, TMPDIR, LANG, and
				// the libraries' defaults (libraryEnv).
				assert.Equal(t, "['HOME', 'LANG', 'MKL_NUM_THREADS', 'MPLBACKEND', 'MPLCONFIGDIR', 'OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'PATH', 'TMPDIR']", out.line(t, "I01 env"))
				assert.Equal(t, "[b'HOME', b'LANG', b'MKL_NUM_THREADS', b'MPLBACKEND', b'MPLCONFIGDIR', b'OMP_NUM_THREADS', b'OPENBLAS_NUM_THREADS', b'PATH', b'TMPDIR']", out.line(t, "I01 proc-environ"))
			},
		},
		{
			id: "I02_host_hostname",
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				f := strings.Fields(out.line(t, "I02"))
				require.Len(t, f, 3)
				assert.Equal(t, "sandbox", f[0])
				assert.Equal(t, "sandbox", f[1])
				assert.Contains(t, []string{"ENOENT", "OK:'sandbox'"}, f[2])
				host, _ := os.Hostname()
				for _, x := range f {
					assert.NotContains(t, x, "'"+host+"'")
					assert.NotEqual(t, host, x)
				}
			},
		},
		{
			id: "I03_host_pids",
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				m := regexp.MustCompile(`^(\d+) (\d+) \[([0-9, ]*)\] (.*)$`).FindStringSubmatch(out.line(t, "I03"))
				require.NotNil(t, m, "I03 line")
				assert.Equal(t, "2", m[1], "python3 is the jail's init's child in its own pid namespace")
				assert.Equal(t, programParent(), m[2], "getppid: the jail's init, or (warm) outside the jail")
				assert.Equal(t, "1, 2", m[3], "only the jail's own processes")
				assert.Equal(t, `OK:b'agentjail-init\x00'`, m[4])
			},
		},
		{
			id: "I05_inherited_fds",
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				assert.Empty(t, out.all("I05 LEAK"), "descriptors leaked into the jail")
				assert.Regexp(t, `^\["OK:'/dev/null'", "OK:'pipe:\[\d+\]'", "OK:'pipe:\[\d+\]'"\]$`, out.line(t, "I05 stdio"))
			},
		},
		{
			id: "I06_mount_table_and_cgroup",
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				stdout := string(res.Stdout)
				cg, _, _ := strings.Cut(strings.TrimPrefix(stdout, "I06 cgroup "), "\nI06 mnt")
				// cgroup v1 hybrid: one line per hierarchy; with the cgroup
				// namespace every path is the jail's own root.
				for _, l := range strings.Split(cg, "\n") {
					assert.Regexp(t, `^\d+:[^:]*:/$`, l, "cgroup path outside the jail's namespace root")
				}
				assert.Contains(t, cg, "0::/")
				mnts := out.all("I06 mnt")
				assert.NotEmpty(t, mnts)
				for _, s := range []string{res.ID, "j-", DefaultRootDir, "agentjail", ".slice", "/home/", "/root", filepath.Dir(e.canaryPath)} {
					for _, l := range mnts {
						assert.NotContains(t, l, s, "mount table reveals a host path")
					}
				}
			},
		},
		{id: "I09_identity_mapping", run: runI09},
		{
			// Files other jails (and the host) read: /usr, and /etc, which
			// an environment's jails share (Runner.ShareEtc).
			id: "I10_dnotify_shared_files",
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				out.expect(t, "I10 dnotify /etc", "", "EPERM")
				out.expect(t, "I10 dnotify /usr/lib", "", "EPERM")
				assert.True(t, strings.HasPrefix(out.line(t, "I10 getfl"), "OK:"), "fcntl itself works")
				reported(t, res, "fcntl")
			},
		},
		pageCacheAttack(),
	}
}
