// Package cgroup gives each agentjail run ("jail") a cgroup of its own,
// created below the cgroup of the calling process, with memory (swap off),
// pids and CPU limits, and reads the figures of the run from the kernel
// afterwards. It is the only importer of github.com/containerd/cgroups/v3
// in agentjail: containerd detects the mode (cgroups.Mode), sets the v2
// limits (cgroup2.Manager.Update) and deletes stale groups (Load +
// Delete). The files on the per-run path are written and read here
// directly, one open+write (or read)+close each, or one pread of a kept
// fd: containerd's Stat reads every file of every controller, and its v1
// New wraps each write in an os.File (seven syscalls for each of the
// seven limits of every jail, where three do). What the limits
// are is not this package's business.
//
// # Layout
//
// cgroup v1 (and hybrid hosts, where the controllers are on v1): a jail is
// <own>/<subtree>/<name> in each of the memory, pids, cpu and cpuacct
// hierarchies, <own> being this process's cgroup in that hierarchy
// (/proc/self/cgroup, located through /proc/self/mountinfo). No group is
// made in devices, freezer, cpuset, blkio or any other hierarchy. The
// memory hierarchy is required; the others are used when mounted
// (Controllers tells which).
//
// cgroup v2: with own cgroup /X, Open moves this process to the leaf
// /X/supervisor (the "no internal processes" rule forbids processes in /X
// once /X enables controllers for its children), enables +memory +pids
// +cpu in /X and /X/<subtree>, and jails are /X/<subtree>/<name>. If /X
// holds processes other than this one, Open refuses (ErrOwnCgroupBusy) and
// says how to get a cgroup of one's own: systemd-run --scope -p
// Delegate=yes, or the systemd service with Delegate=yes.
//
// Each live Group holds an exclusive flock on each of its directories.
// The kernel drops them when the process dies, so Stale reports exactly
// the groups of dead processes, even where several processes share part
// of the subtree (on v1 the pids, cpu and cpuacct hierarchies are
// commonly "/" for every process while memory cgroups differ).
//
// # Files, per version
//
//	                 v1                                   v2
//	limit            memory.limit_in_bytes                memory.max
//	no swap          memory.memsw.limit_in_bytes = limit  memory.swap.max = 0
//	                 (if swap accounting), swappiness = 0
//	OOM kills all    (caller, on OOMEvents)               memory.oom.group = 1
//	pids / cpu       pids.max; cpu.cfs_quota_us (the      pids.max; cpu.max
//	                 default period, 100 ms)
//	peak             memory.max_usage_in_bytes (fd kept)  memory.peak (fd kept)
//	OOM kills        memory.oom_control oom_kill          memory.events oom_kill,
//	                                                      oom_group_kill
//	OOM watch        eventfd via cgroup.event_control     inotify on memory.events
//	CPU time         cpuacct.usage (ns)                   cpu.stat usage_usec
//	pids figures     pids.peak, pids.events max           pids.peak, pids.events max
//	kill             kill(2) each pid of cgroup.procs     cgroup.kill
//
// # Why attach-then-reset gives a precise peak
//
// The jail's init is started by the parent, sets itself up (namespaces,
// mounts...) and is attached to the group just before it execs python.
// Neither version moves already-charged memory with a migrating process
// (v1 memory.move_charge_at_immigrate stays 0, and is deprecated; v2
// never moves charges), so the set-up's pages stay charged to the parent's
// group. Right after the move Attach resets the high-water mark: v1 by
// writing to memory.max_usage_in_bytes (it becomes the current usage,
// about zero), v2 (kernel ≥ 6.12) by writing to memory.peak through an fd
// that Stats later reads, as the reset is per open file description. After
// exec the old address space is freed, so the peak is what python and its
// children charged, page cache and kernel memory included. On v2 kernels
// without the reset (5.19–6.11), memory.peak counts since the group was
// created, which for a group made just before the run is nearly the same
// ("memory.peak (since creation)"); before 5.19 the peak is unknown (-1).
//
// # v1 and v2 differences that matter
//
//   - v1 has no memory.oom.group: the OOM killer kills one process, and the
//     caller must kill the rest (OOMEvents). v2 kills the whole group, and
//     a group kill counts once in Stats.OOMKills.
//   - v1 disables swap through memsw only when swap accounting is on; the
//     swappiness=0 write applies either way.
//   - v2 memory.peak reset needs 6.12; v1 resets memory.max_usage_in_bytes
//     on any kernel.
//   - Kill on v2 is atomic (cgroup.kill, 5.14+, which also stops forks in
//     flight); on v1 it is a loop over cgroup.procs bounded to 2 s.
//   - Baselines: OOM and pids.events counters are read at Attach and Stats
//     reports deltas, so a group attached twice stays correct.
//
// # Cost
//
// Measured on the CI VM (cgroup v1 hybrid, Linux 6.18, 2 vCPUs),
// BenchmarkLifecycle: Create ≈ 95–130 µs (four mkdirs ≈ 50 µs, the memory
// one ≈ 35; four flocks ≈ 5 µs; containerd's limit writes ≈ 55 µs where
// raw open+write+close would take ≈ 15), Attach ≈ 40–75 µs when warm (see
// below), Stats ≈ 12 µs, Delete of an empty group ≈ 25–30 µs, CPUTime
// ≈ 0.6 µs (one pread of a kept fd, against ≈ 3 µs for open+read+close).
//
// Attach's cgroup.procs writes take the kernel's global
// cgroup_threadgroup_rwsem for writing. Unless favordynmods is in force
// (a cgroup mount option; or CONFIG_CGROUP_FAVOR_DYNMODS, or the
// cgroup_favordynmods= boot parameter where the kernel has it), taking it
// waits for an RCU grace period when no migration happened in the last
// few milliseconds: 5–7 ms on this VM, against tens of µs when warm. Where
// that matters, enable favordynmods on the host or, on v2, start the init
// in the group with clone3(CLONE_INTO_CGROUP), which takes no write lock.
package cgroup
