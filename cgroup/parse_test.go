package cgroup

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Pure parser tests on fake file contents: no root, no cgroups needed.

func TestParseOOMControl(t *testing.T) {
	// v1 memory.oom_control (kernel ≥ 4.13 has oom_kill)
	n, err := parseOOMControl([]byte("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"))
	require.NoError(t, err)
	assert.EqualValues(t, 3, n)

	_, err = parseOOMControl([]byte("oom_kill_disable 0\nunder_oom 1\n"))
	assert.ErrorIs(t, err, errNoKey, "kernel < 4.13 lacks oom_kill")

	_, err = parseOOMControl([]byte("oom_kill x\n"))
	assert.Error(t, err)
}

func TestParseMemoryEvents(t *testing.T) {
	// v2 memory.events of a 6.x kernel
	ev, err := parseMemoryEvents([]byte("low 0\nhigh 0\nmax 12\noom 2\noom_kill 5\noom_group_kill 1\n"))
	require.NoError(t, err)
	assert.Equal(t, memEvents{OOMKill: 5, OOMGroupKill: 1, HasGroupKill: true}, ev)

	// kernel < 5.17: no oom_group_kill
	ev, err = parseMemoryEvents([]byte("low 0\nhigh 0\nmax 1\noom 1\noom_kill 1"))
	require.NoError(t, err)
	assert.Equal(t, memEvents{OOMKill: 1}, ev)

	_, err = parseMemoryEvents([]byte("low 0\nhigh 0\n"))
	assert.Error(t, err)
}

func TestOOMKillsSince(t *testing.T) {
	g := func(kill, group int64) memEvents {
		return memEvents{OOMKill: kill, OOMGroupKill: group, HasGroupKill: true}
	}
	// one group kill of 4 processes counts once
	assert.EqualValues(t, 1, oomKillsSince(g(2, 1), g(6, 2)))
	// no group kill (oom.group not in force): every victim counts
	assert.EqualValues(t, 2, oomKillsSince(g(1, 0), g(3, 0)))
	// kernel without oom_group_kill
	assert.EqualValues(t, 3, oomKillsSince(memEvents{OOMKill: 1}, memEvents{OOMKill: 4}))
	// counters never go backwards; a bogus baseline gives 0, not negative
	assert.EqualValues(t, 0, oomKillsSince(memEvents{OOMKill: 9}, memEvents{OOMKill: 4}))
}

func TestParsePidsEvents(t *testing.T) {
	n, err := parsePidsEvents([]byte("max 0\n"))
	require.NoError(t, err)
	assert.EqualValues(t, 0, n)
	// a key that merely starts with "max" must not match
	n, err = parsePidsEvents([]byte("max.imposed 4\nmax 7\n"))
	require.NoError(t, err)
	assert.EqualValues(t, 7, n)
	_, err = parsePidsEvents(nil)
	assert.Error(t, err)
}

func TestParseCPUStat(t *testing.T) {
	data := []byte("usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\n" +
		"core_sched.force_idle_usec 0\nnr_periods 10\nnr_throttled 2\nthrottled_usec 5000\nnr_bursts 0\nburst_usec 0\n")
	n, err := parseCPUStatUsage(data)
	require.NoError(t, err)
	assert.EqualValues(t, 1234567, n)
	// v1 cpu.stat has no usage_usec
	_, err = parseCPUStatUsage([]byte("nr_periods 0\nnr_throttled 0\nthrottled_time 0\n"))
	assert.ErrorIs(t, err, errNoKey)
}

func TestParseInt(t *testing.T) {
	for in, want := range map[string]int64{"123\n": 123, "max\n": -1, "9223372036854771712\n": 9223372036854771712, "0": 0} {
		n, err := parseInt([]byte(in))
		require.NoError(t, err, in)
		assert.Equal(t, want, n, in)
	}
	_, err := parseInt([]byte(""))
	assert.Error(t, err)
	_, err = parseInt([]byte("12 34"))
	assert.Error(t, err)
}

func TestParsePids(t *testing.T) {
	p, err := parsePids([]byte("12\n345\n"))
	require.NoError(t, err)
	assert.Equal(t, []int{12, 345}, p)
	p, err = parsePids(nil)
	require.NoError(t, err)
	assert.Empty(t, p)
	_, err = parsePids([]byte("12\nx\n"))
	assert.Error(t, err)
}

func TestParseProcCgroup(t *testing.T) {
	t.Run("hybrid", func(t *testing.T) {
		// this CI machine: separate cpu and cpuacct hierarchies, no systemd
		pc, err := parseProcCgroup([]byte("9:name=systemd:/\n8:pids:/\n7:blkio:/\n6:freezer:/\n5:devices:/\n" +
			"4:memory:/process_api/4e368459530b87829cf8c42f1cf29f59\n3:cpuset:/\n2:cpuacct:/\n1:cpu:/\n0::/\n"))
		require.NoError(t, err)
		assert.Equal(t, "/process_api/4e368459530b87829cf8c42f1cf29f59", pc.V1["memory"])
		assert.Equal(t, "/", pc.V1["pids"])
		assert.Equal(t, "/", pc.V1["cpu"])
		assert.Equal(t, "/", pc.V1["cpuacct"])
		assert.Equal(t, "/", pc.V1["name=systemd"])
		assert.True(t, pc.HasUnified)
		assert.Equal(t, "/", pc.Unified)
	})
	t.Run("v1 co-mounted", func(t *testing.T) {
		pc, err := parseProcCgroup([]byte("11:cpu,cpuacct:/user.slice\n5:memory:/user.slice/user-1000.slice/session-2.scope\n1:name=systemd:/user.slice/user-1000.slice/session-2.scope\n"))
		require.NoError(t, err)
		assert.Equal(t, "/user.slice", pc.V1["cpu"])
		assert.Equal(t, "/user.slice", pc.V1["cpuacct"])
		assert.Equal(t, "/user.slice/user-1000.slice/session-2.scope", pc.V1["memory"])
		assert.False(t, pc.HasUnified)
	})
	t.Run("v2", func(t *testing.T) {
		pc, err := parseProcCgroup([]byte("0::/system.slice/agentjail.service\n"))
		require.NoError(t, err)
		assert.Empty(t, pc.V1)
		assert.True(t, pc.HasUnified)
		assert.Equal(t, "/system.slice/agentjail.service", pc.Unified)
	})
	t.Run("path with colon", func(t *testing.T) {
		pc, err := parseProcCgroup([]byte("0::/a:b\n"))
		require.NoError(t, err)
		assert.Equal(t, "/a:b", pc.Unified)
	})
	t.Run("malformed", func(t *testing.T) {
		_, err := parseProcCgroup([]byte("garbage\n"))
		assert.Error(t, err)
		_, err = parseProcCgroup([]byte("1:cpu:relative\n"))
		assert.Error(t, err)
	})
}

func TestParseMountinfo(t *testing.T) {
	data := []byte(`22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:9 master:2 - cgroup cgroup rw,memory,favordynmods
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd,release_agent=/x
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate
50 31 0:40 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro,relatime - cgroup cgroup ro,cpu,cpuacct
51 31 0:41 / /mnt/with\040space rw - cgroup cgroup rw,pids
`)
	ms, err := parseMountinfo(data)
	require.NoError(t, err)
	require.Len(t, ms, 7, "tmpfs and ext4 are skipped")
	assert.Equal(t, mount{Point: "/sys/fs/cgroup/cpu", Root: "/", Type: "cgroup", Controllers: []string{"cpu"}}, ms[0])
	assert.Equal(t, mount{Point: "/sys/fs/cgroup/memory", Root: "/", Type: "cgroup", Controllers: []string{"memory"}, FavorDynmods: true}, ms[2],
		"optional fields are skipped; favordynmods is no controller")
	assert.Equal(t, []string{"xattr", "name=systemd"}, ms[3].Controllers)
	assert.Equal(t, mount{Point: "/sys/fs/cgroup/unified", Root: "/", Type: "cgroup2"}, ms[4])
	v2, err := parseMountinfo([]byte("41 31 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate,favordynmods,memory_recursiveprot\n"))
	require.NoError(t, err)
	assert.True(t, v2[0].FavorDynmods)
	assert.Equal(t, mount{Point: "/sys/fs/cgroup/cpu,cpuacct", Root: "/docker/abc", Type: "cgroup", Controllers: []string{"cpu", "cpuacct"}}, ms[5])
	assert.Equal(t, "/mnt/with space", ms[6].Point)

	_, err = parseMountinfo([]byte("1 2 3\n"))
	assert.Error(t, err)
}

func TestCgroupDir(t *testing.T) {
	m := mount{Point: "/sys/fs/cgroup/memory", Root: "/"}
	d, err := cgroupDir(m, "/process_api/x")
	require.NoError(t, err)
	assert.Equal(t, "/sys/fs/cgroup/memory/process_api/x", d)
	d, err = cgroupDir(m, "/")
	require.NoError(t, err)
	assert.Equal(t, "/sys/fs/cgroup/memory", d)

	// a container that sees only its own cgroup mounted
	m = mount{Point: "/sys/fs/cgroup/memory", Root: "/docker/abc"}
	d, err = cgroupDir(m, "/docker/abc")
	require.NoError(t, err)
	assert.Equal(t, "/sys/fs/cgroup/memory", d)
	d, err = cgroupDir(m, "/docker/abc/sub")
	require.NoError(t, err)
	assert.Equal(t, "/sys/fs/cgroup/memory/sub", d)
	_, err = cgroupDir(m, "/docker/abcd")
	assert.Error(t, err, "a sibling with a common prefix is not below the root")
}

func TestValidName(t *testing.T) {
	for _, ok := range []string{"a", "run-42", "A_b.c", "x.y-z_0", "..a"[1:], "a.b"} {
		assert.NoError(t, validName(ok), ok)
	}
	long := make([]byte, 256)
	for i := range long {
		long[i] = 'a'
	}
	for _, bad := range []string{"", ".", "..", "a..b", "../x", "a/b", "/a", "a b", "a\x00", "é", "a\n", string(long)} {
		assert.ErrorIs(t, validName(bad), ErrInvalidName, "%q", bad)
	}
}

func TestResourcesLimits(t *testing.T) {
	l, err := Resources{MemoryBytes: 64 << 20, Pids: 8, CPUs: 1.5}.limits()
	require.NoError(t, err)
	assert.Equal(t, limits{memory: 64 << 20, pids: 8, quotaUS: 150000}, l)

	l, err = Resources{}.limits()
	require.NoError(t, err)
	assert.Equal(t, limits{}, l, "zero = no limit")

	l, err = Resources{CPUs: 0.001}.limits()
	require.NoError(t, err)
	assert.EqualValues(t, cpuMinQuotaUS, l.quotaUS, "the kernel refuses quotas under 1 ms")

	for _, r := range []Resources{{MemoryBytes: -1}, {Pids: -1}, {CPUs: -0.5}, {CPUs: 1e12}} {
		_, err := r.limits()
		assert.True(t, errors.Is(err, ErrInvalidResources), "%+v", r)
	}

	assert.EqualValues(t, 0, limitInForce(0, 4096))
	assert.EqualValues(t, 8192, limitInForce(8192+4095, 4096))
}

func TestSubsystemPath(t *testing.T) {
	// The containerd subsystem joins <dir(mount)>/<name> and the path: the
	// result must be the directory we computed, whatever the mount's name.
	for _, tc := range []struct{ mount, name, dir string }{
		{"/sys/fs/cgroup/memory", "memory", "/sys/fs/cgroup/memory/process_api/x/agentjail/j1"},
		{"/sys/fs/cgroup/pids", "pids", "/sys/fs/cgroup/pids/agentjail/j1"},
		{"/sys/fs/cgroup/cpu,cpuacct", "cpu", "/sys/fs/cgroup/cpu,cpuacct/user.slice/agentjail/j1"},
		{"/sys/fs/cgroup/cpu,cpuacct", "cpuacct", "/sys/fs/cgroup/cpu,cpuacct/user.slice/agentjail/j1"},
		{"/cg/weird", "memory", "/cg/weird/a/b"},
	} {
		p, err := subsystemPath(tc.mount, tc.name, tc.dir)
		require.NoError(t, err)
		assert.Equal(t, tc.dir, filepath.Join(filepath.Dir(tc.mount), tc.name, p), "%+v -> %s", tc, p)
	}
	p, err := subsystemPath("/sys/fs/cgroup/memory", "memory", "/sys/fs/cgroup/memory/a")
	require.NoError(t, err)
	assert.Equal(t, "/a", p)
}
