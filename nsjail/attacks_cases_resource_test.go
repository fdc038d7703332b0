package nsjail

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

// attacksResource is attackCases' group R: resource exhaustion.
func attacksResource() []attack {
	return []attack{
		{
			id: "R01_memory_bomb",
			host: func(t *testing.T, e *attackEnv) func(*testing.T, *Result) {
				oom, rss := vmstat("oom_kill"), systest.SelfRSS()
				kmsg := kernelLogFromNow(t)
				return func(t *testing.T, res *Result) {
					// /proc/vmstat counts every OOM kill on the host, the
					// jail's among them (a v2 group kill counts each
					// process of the jail; the jail counts it once).
					assert.GreaterOrEqual(t, vmstat("oom_kill")-oom, res.OOMKills, "OOM kills")
					// The host OOM killer killed nothing outside a jail's
					// cgroup during the run: no global OOM kill, and no
					// memcg kill outside a jail group. The kernel's log
					// says which (other tests' jails, in packages that run
					// beside this one, are killed too: the host counter
					// alone cannot tell them apart).
					for _, l := range kmsg() {
						assert.NotContains(t, l, "Out of memory", "a global OOM kill") // a memcg's says "Memory cgroup out of memory"
						if i := strings.Index(l, "task_memcg="); i >= 0 {
							memcg, _, _ := strings.Cut(l[i+len("task_memcg="):], ",")
							assert.Regexp(t, `/agentjail[^/]*/[^/]+$`, memcg, "an OOM kill outside a jail's cgroup: %s", l)
						}
					}
					assert.Less(t, systest.SelfRSS()-rss, int64(32<<20), "the daemon's RSS grew")
				}
			},
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				lines := out.all("R01 MiB")
				require.NotEmpty(t, lines)
				last, err := strconv.Atoi(strings.Fields(lines[len(lines)-1])[2])
				require.NoError(t, err)
				assert.LessOrEqual(t, last, 256)
				// docs/contract.md: memory_limit means "the cgroup's OOM-kill
				// counter rose during the run"; docs/security.md: oom_kills ≥ 1.
				if res.KillReason == KillMemoryLimit {
					assert.Equal(t, StatusKilled, res.Status)
					assert.Equal(t, syscall.SIGKILL, res.Signal)
					assert.GreaterOrEqual(t, res.OOMKills, int64(1))
					assert.GreaterOrEqual(t, res.PeakMemoryBytes, int64(256<<20)*9/10)
					assert.LessOrEqual(t, res.PeakMemoryBytes, int64(256<<20))
				} else {
					// The acceptable alternative: MemoryError under an
					// address-space limit, and then no OOM claim.
					assert.Equal(t, StatusError, res.Status)
					assert.Equal(t, 1, res.ExitCode)
					assert.Contains(t, string(res.Stderr), "MemoryError")
					assert.Zero(t, res.OOMKills)
					assert.Equal(t, KillNone, res.KillReason)
				}
			},
		},
		{
			id: "R03_peak_memory_reporting",
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				assert.Equal(t, 0, res.ExitCode)
				out.line(t, "R03 done")
				assert.Zero(t, res.OOMKills)
				assert.GreaterOrEqual(t, res.PeakMemoryBytes, int64(200<<20), "peak from a post-exit reading or the daemon's rusage")
				assert.Less(t, res.PeakMemoryBytes, int64(256<<20))
			},
		},
		{
			// Wall limit 2 s instead of 10 s.
			id:     "R04_fork_bomb",
			mod:    wall(2 * time.Second),
			canary: true,
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				wallKilled(t, res, 2*time.Second)
				assert.Positive(t, res.PidsMaxHits, "pids_max_hits")
				if res.PidsPeak >= 0 {
					assert.LessOrEqual(t, res.PidsPeak, int64(64))
				}
			},
		},
		{
			// Wall limit 2 s instead of 10 s.
			id:     "R05_thread_bomb",
			mod:    wall(2 * time.Second),
			canary: true,
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				f := strings.Fields(out.line(t, "R05 stopped at"))
				require.Len(t, f, 2)
				n, err := strconv.Atoi(f[0])
				require.NoError(t, err)
				assert.Equal(t, "RuntimeError", f[1])
				assert.GreaterOrEqual(t, n, 50, "threads count against pids.max (64)")
				assert.LessOrEqual(t, n, 63, "threads count against pids.max (64)")
				assert.Positive(t, res.PidsMaxHits)
				wallKilled(t, res, 2*time.Second)
			},
		},
		{
			id: "R06_disk_fill_tmp",
			// The jail's files are in its own tmpfs: none on the host's
			// /tmp or below the state directory. (Not their free space:
			// other tenants of the host change it.)
			host: func(t *testing.T, e *attackEnv) func(*testing.T, *Result) {
				return func(t *testing.T, res *Result) {
					assert.Empty(t, systest.FilesOf(res.HostUID, 3, "/tmp", systest.StateDir), "the jail's files reached the host")
				}
			},
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				out.expect(t, "R06", "", "ENOSPC")
				n, err := strconv.Atoi(out.result(t, "R06", "MiB"))
				require.NoError(t, err)
				assert.GreaterOrEqual(t, n, 56, "about 64 MiB (tmp_bytes)")
				assert.LessOrEqual(t, n, 64, "about 64 MiB (tmp_bytes)")
			},
		},
		{
			id: "R07_file_size_and_sparse_bomb",
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				assert.Equal(t, "EFBIG 33554432", out.line(t, "R07 write"))
				out.expect(t, "R07 truncate-1TiB", "", "EFBIG")
			},
		},
		{
			id: "R08_inode_exhaustion",
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				out.expect(t, "R08", "", "ENOSPC")
				f := strings.Fields(out.line(t, "R08"))
				require.Len(t, f, 2)
				n, err := strconv.Atoi(f[1])
				require.NoError(t, err)
				assert.GreaterOrEqual(t, n, 3900, "about 4090 (nr_inodes=4096)")
				assert.LessOrEqual(t, n, 4096, "bounded by nr_inodes=4096")
			},
		},
		{
			id: "R09_fd_exhaustion",
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				assert.Equal(t, "EMFILE 253", out.line(t, "R09"), "RLIMIT_NOFILE 256 minus stdio")
				out.expect(t, "R09 raise-hard", "", "ValueError")
			},
		},
		{
			id: "R11_stdout_flood",
			host: func(t *testing.T, e *attackEnv) func(*testing.T, *Result) {
				rss := systest.SelfRSS()
				return func(t *testing.T, res *Result) {
					assert.Less(t, systest.SelfRSS()-rss, int64(1<<20)+int64(16<<20), "the daemon's RSS grew by more than 1 MiB plus a constant")
				}
			},
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				// agentjail kills at the cap (output_limit) rather than draining.
				assert.Equal(t, StatusKilled, res.Status)
				assert.Equal(t, KillOutputLimit, res.KillReason)
				assert.LessOrEqual(t, len(res.Stdout), 1<<20)
				assert.True(t, res.StdoutTruncated)
				assert.Less(t, res.WallTime, 2*time.Second, "no deadlock on a full pipe")
			},
		},
		{
			// CPU budget 1.5 s (docs/security.md: 6 s), wall 5 s: the budget, not
			// the wall clock, must end it.
			id: "R13_cpu_spin_many_processes",
			mod: func(s *Spec) {
				s.Limits.CPUTime = 1500 * time.Millisecond
				s.Limits.WallTime = 5 * time.Second
			},
			canary: true,
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				assert.Equal(t, StatusKilled, res.Status)
				assert.Equal(t, KillCPUTimeout, res.KillReason)
				assert.GreaterOrEqual(t, res.CPUTime, 1500*time.Millisecond, "cpu_usec reported")
				assert.LessOrEqual(t, res.CPUTime, 1800*time.Millisecond, "CPU budget overshoot")
				// At most 1 CPU: cpu time does not outrun the wall clock.
				assert.LessOrEqual(t, float64(res.CPUTime), 1.1*float64(res.WallTime)+float64(50*time.Millisecond), "more than 1 CPU consumed")
				assert.Less(t, res.WallTime, 5*time.Second)
			},
		},
		{
			// Wall limit 1 s instead of 10 s.
			id:  "R14_sleep_forever",
			mod: wall(time.Second),
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				wallKilled(t, res, time.Second)
				assert.Less(t, res.CPUTime, 200*time.Millisecond, "cpu_usec about 0")
			},
		},
		{
			id: "R15_orphan_keeps_stdout_open",
			host: func(t *testing.T, e *attackEnv) func(*testing.T, *Result) {
				start := time.Now()
				return func(t *testing.T, res *Result) {
					// jailRun's leftover check (no process under the jail's
					// uid) has run too: the grandchild is gone.
					assert.Less(t, time.Since(start), 3*time.Second, "the run waited for the grandchild")
				}
			},
			check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
				okRun(t, res)
				assert.Equal(t, 0, res.ExitCode)
				out.line(t, "R15 main exiting")
				assert.Less(t, res.WallTime, time.Second, "the result comes back within about 1 s of main's exit")
			},
		},
	}
}
