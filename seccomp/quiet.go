package seccomp

import "syscall"

// Linux x86_64 values of the quiet rules.
const (
	afNetlink    = 16 // AF_NETLINK
	netlinkRoute = 0  // NETLINK_ROUTE
	rwfNowait    = 8  // RWF_NOWAIT
)

// Quiet is a call that the filter answers with an error of its own, without
// notifying the supervisor: the call does not run, is not reported in the
// result's `seccomp` field and never ends a jail, even under
// on_forbidden_syscall "kill". Each is a call that a library makes and
// survives when it fails with that error, which is also what a kernel
// without the feature answers; docs/security.md ("Probes answered
// quietly") lists them.
type Quiet struct {
	Syscall string
	Args    string        // which calls: the arguments the filter looks at
	Errno   syscall.Errno // the answer
	Who     string        // who makes it, and what they do on the error
	rules   []Rule
}

// QuietProbes returns the quiet answers of DefaultPolicy (and ZygotePolicy).
func QuietProbes() []Quiet {
	return []Quiet{
		{
			Syscall: "socket", Args: "AF_NETLINK, any type, NETLINK_ROUTE", Errno: syscall.EAFNOSUPPORT,
			Who: "glibc's getaddrinfo with AI_ADDRCONFIG (aiohttp, asyncio's loop.getaddrinfo(flags=AI_ADDRCONFIG)) asks the kernel which address families have an address; on an error it assumes both IPv4 and IPv6. if_nameindex and getifaddrs (socket.if_nameindex) fail with the error.",
			// NETLINK_ROUTE only: the other netlink protocols (audit,
			// netfilter, uevents, sock_diag) stay forbidden and reported.
			rules: []Rule{{Syscall: "socket", Action: Errno, Errno: syscall.EAFNOSUPPORT, When: []Cond{
				{Arg: 0, Mask: mask32, Value: afNetlink},
				{Arg: 2, Mask: mask32, Value: netlinkRoute},
			}}},
		},
		{
			Syscall: "preadv2", Args: "flags with RWF_NOWAIT", Errno: syscall.EOPNOTSUPP,
			Who:   "nothing in the jail's runtime; a program that asks must handle the error already, which Linux gives for a file whose file system cannot read without blocking. Answered so, because a read that only succeeds from the page cache tells whether another jail or the host read a shared file (/usr) recently.",
			rules: nowaitRules("preadv2"),
		},
		{
			Syscall: "pwritev2", Args: "flags with RWF_NOWAIT", Errno: syscall.EOPNOTSUPP,
			Who:   "as preadv2: refused the same way for symmetry; a jail can write no shared file.",
			rules: nowaitRules("pwritev2"),
		},
	}
}

// quietRules are the rules of QuietProbes.
func quietRules() []Rule {
	var r []Rule
	for _, q := range QuietProbes() {
		r = append(r, q.rules...)
	}
	return r
}

// nowaitRules allow name (preadv2, pwritev2) unless its flags, the sixth
// argument on x86_64 (fd, iov, iovcnt, pos_l, pos_h, flags), hold
// RWF_NOWAIT, which fails with EOPNOTSUPP. The flags are an int: bit 3 of
// the register is what the kernel sees.
func nowaitRules(name string) []Rule {
	return []Rule{
		{Syscall: name, Action: Allow, When: []Cond{{Arg: 5, Mask: rwfNowait, Value: 0}}},
		{Syscall: name, Action: Errno, Errno: syscall.EOPNOTSUPP, When: []Cond{{Arg: 5, Mask: rwfNowait, Value: rwfNowait}}},
	}
}
