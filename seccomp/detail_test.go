package seccomp

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDetailNamesWhatTheFilterLookedAt(t *testing.T) {
	for _, tc := range []struct {
		name string
		args [6]uint64
		want string
	}{
		{"socket", [6]uint64{afNetlink, 3, 9}, "AF_NETLINK, NETLINK_AUDIT"},
		{"socket", [6]uint64{afNetlink, 3, 99}, "AF_NETLINK, 0x63"},
		{"socket", [6]uint64{afInet, 3 | 0x80000, 1}, "AF_INET, SOCK_RAW"},
		{"socket", [6]uint64{afInet6, 2, 136}, "AF_INET6, SOCK_DGRAM, IPPROTO_UDPLITE"},
		{"socket", [6]uint64{afInet, 1, 132}, "AF_INET, SOCK_STREAM, IPPROTO_SCTP"},
		{"socket", [6]uint64{afInet, 6, 33}, "AF_INET, SOCK_DCCP"},
		{"socket", [6]uint64{1<<32 | 40, 1, 0}, "AF_VSOCK"},
		{"socket", [6]uint64{17, 3, 0x300}, "AF_PACKET"},
		{"socket", [6]uint64{99, 1, 0}, "family 99"},
		{"socketpair", [6]uint64{afInet, 1, 0}, "AF_INET"},
		{"clone", [6]uint64{0x10000000 | 0x8000 | 17}, "CLONE_PARENT|CLONE_NEWUSER"},
		{"ioctl", [6]uint64{0, 0x123<<32 | tiocsti}, "TIOCSTI"},
		{"prctl", [6]uint64{prSetSeccomp, 2}, "PR_SET_SECCOMP"},
		{"fcntl", [6]uint64{3, fNotify}, "F_NOTIFY"},
		{"mmap", [6]uint64{0, 1 << 21, 3, 0x22 | mapHugetlb}, "MAP_HUGETLB"},
		{"memfd_create", [6]uint64{0, mfdHugetlb | 1}, "MFD_HUGETLB"},
		{"shmget", [6]uint64{0, 1 << 21, shmHugetlb | 0o600}, "SHM_HUGETLB"},
		{"shmctl", [6]uint64{0, shmLock}, "SHM_LOCK"},
		{"personality", [6]uint64{0x400000}, "0x400000"},
		{"membarrier", [6]uint64{1}, "MEMBARRIER_CMD_GLOBAL"},
		{"mknodat", [6]uint64{0, 0, 0o020000 | 0o600}, "S_IFCHR"},
		{"mknod", [6]uint64{0, 0o060000}, "S_IFBLK"},
		{"ptrace", [6]uint64{16, 1}, ""},
	} {
		assert.Equal(t, tc.want, Detail(tc.name, tc.args), "%s %#x", tc.name, tc.args)
	}
}

// TestEveryArgumentRuleHasADetail: a call that the policy forbids for some
// arguments and not others is reported with what those arguments were.
func TestEveryArgumentRuleHasADetail(t *testing.T) {
	// Rules that cover every value: the call is never forbidden by them.
	never := map[string]bool{"msync": true, "preadv2": true, "pwritev2": true}
	for _, r := range DefaultPolicy().Rules {
		if (len(r.When) > 0 || r.Except != nil) && !never[r.Syscall] {
			assert.Contains(t, describers, r.Syscall, "a rule looks at %s's arguments: name them in Detail", r.Syscall)
		}
	}
	for name := range describers {
		assert.NotEmpty(t, DefaultPolicy().rulesFor(name), "Detail for %s, which the policy does not decide by its arguments", name)
	}
}

func TestCollectorKeepsDetailsApart(t *testing.T) {
	var c Collector
	c.AddViolation(Violation{Syscall: "socket", Number: 41, Arch: auditArchX86_64, Detail: "AF_NETLINK, NETLINK_AUDIT"})
	c.AddViolation(Violation{Syscall: "socket", Number: 41, Arch: auditArchX86_64, Detail: "AF_INET, SOCK_RAW"})
	c.AddViolation(Violation{Syscall: "socket", Number: 41, Arch: auditArchX86_64, Detail: "AF_NETLINK, NETLINK_AUDIT"})
	before := c.Report()
	c.AddViolation(Violation{Syscall: "socket", Number: 41, Arch: auditArchX86_64, Detail: "AF_INET, SOCK_RAW"})
	r := c.Report()
	require.Equal(t, &Report{Syscall: "socket", Number: 41, Detail: "AF_NETLINK, NETLINK_AUDIT", Calls: []CallCount{
		{Syscall: "socket", Number: 41, Count: 2, Detail: "AF_NETLINK, NETLINK_AUDIT"},
		{Syscall: "socket", Number: 41, Count: 2, Detail: "AF_INET, SOCK_RAW"},
	}}, r)
	require.Equal(t, &Report{Syscall: "socket", Number: 41, Detail: "AF_INET, SOCK_RAW", Calls: []CallCount{
		{Syscall: "socket", Number: 41, Count: 1, Detail: "AF_INET, SOCK_RAW"},
	}}, r.Since(before))
	// A foreign call has no x86_64 arguments to name.
	c.AddViolation(Violation{Number: 20, Arch: auditArchI386, Foreign: true, Detail: "x"})
	require.Equal(t, "", c.Report().Calls[2].Detail)
}
