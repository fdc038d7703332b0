package seccomp

import (
	"fmt"
	"strings"
)

// Detail names the arguments that made the filter forbid a native x86_64
// call, for the calls it decides by their arguments: "AF_NETLINK,
// NETLINK_AUDIT" for socket, "CLONE_NEWUSER" for clone, "TIOCSTI" for ioctl.
// It is "" for a call the filter forbids whatever its arguments (ptrace):
// the name says it all. The supervisor has the arguments (user notification
// gives the six registers); pointers are never followed.
func Detail(name string, args [6]uint64) string {
	d, ok := describers[name]
	if !ok {
		return ""
	}
	return d(args)
}

var describers = map[string]func(a [6]uint64) string{
	"socket":     socketDetail,
	"socketpair": func(a [6]uint64) string { return familyName(uint32(a[0])) },
	"clone": func(a [6]uint64) string {
		return flagNames(a[0]&cloneForbidden, cloneFlagNames)
	},
	"ioctl": func(a [6]uint64) string {
		return valueName(uint32(a[1]), map[uint32]string{tiocsti: "TIOCSTI", tioclinux: "TIOCLINUX"})
	},
	"prctl": func(a [6]uint64) string {
		return valueName(uint32(a[0]), map[uint32]string{prSetSeccomp: "PR_SET_SECCOMP"})
	},
	"fcntl": func(a [6]uint64) string { return valueName(uint32(a[1]), map[uint32]string{fNotify: "F_NOTIFY"}) },
	"mmap": func(a [6]uint64) string {
		return flagNames(a[3]&mapHugetlb, map[uint64]string{mapHugetlb: "MAP_HUGETLB"})
	},
	"memfd_create": func(a [6]uint64) string {
		return flagNames(a[1]&mfdHugetlb, map[uint64]string{mfdHugetlb: "MFD_HUGETLB"})
	},
	"shmget": func(a [6]uint64) string {
		return flagNames(a[2]&shmHugetlb, map[uint64]string{shmHugetlb: "SHM_HUGETLB"})
	},
	"shmctl":      func(a [6]uint64) string { return valueName(uint32(a[1]), map[uint32]string{shmLock: "SHM_LOCK"}) },
	"personality": func(a [6]uint64) string { return fmt.Sprintf("%#x", uint32(a[0])) },
	"membarrier": func(a [6]uint64) string {
		return valueName(uint32(a[0]), map[uint32]string{1: "MEMBARRIER_CMD_GLOBAL", 2: "MEMBARRIER_CMD_GLOBAL_EXPEDITED", 4: "MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED"})
	},
	"mknod":   func(a [6]uint64) string { return fileType(a[1]) },
	"mknodat": func(a [6]uint64) string { return fileType(a[2]) },
}

// socketDetail names what the socket rules look at: the family; for
// AF_INET and AF_INET6 the type, and the protocol when the type is one the
// filter allows with some protocols (stream, datagram); for AF_NETLINK the
// protocol (NETLINK_ROUTE is answered quietly, the others are forbidden).
func socketDetail(a [6]uint64) string {
	fam := uint32(a[0])
	parts := []string{familyName(fam)}
	switch fam {
	case afInet, afInet6:
		typ := uint32(a[1] & sockTypeMask)
		parts = append(parts, valueName(typ, sockTypeNames))
		if typ == sockStream || typ == sockDgram {
			parts = append(parts, valueName(uint32(a[2]), ipProtoNames))
		}
	case afNetlink:
		parts = append(parts, valueName(uint32(a[2]), netlinkNames))
	}
	return strings.Join(parts, ", ")
}

func familyName(f uint32) string {
	if n, ok := familyNames[f]; ok {
		return n
	}
	return fmt.Sprintf("family %d", f)
}

// valueName is names[v], or v in hex.
func valueName(v uint32, names map[uint32]string) string {
	if n, ok := names[v]; ok {
		return n
	}
	return fmt.Sprintf("%#x", v)
}

// flagNames joins the names of the bits set in v, lowest first; "" for 0.
func flagNames(v uint64, names map[uint64]string) string {
	var out []string
	for bit := uint64(1); bit != 0 && v != 0; bit <<= 1 {
		if v&bit == 0 {
			continue
		}
		v &^= bit
		if n, ok := names[bit]; ok {
			out = append(out, n)
		} else {
			out = append(out, fmt.Sprintf("%#x", bit))
		}
	}
	return strings.Join(out, "|")
}

func fileType(mode uint64) string {
	return valueName(uint32(mode&sIFMT), map[uint32]string{0o020000: "S_IFCHR", 0o060000: "S_IFBLK", 0o040000: "S_IFDIR", 0o120000: "S_IFLNK"})
}

// Linux x86_64 values (linux/socket.h, linux/in.h, linux/netlink.h,
// linux/sched.h), for the report only.
var (
	familyNames = map[uint32]string{
		0: "AF_UNSPEC", 1: "AF_UNIX", 2: "AF_INET", 3: "AF_AX25", 4: "AF_IPX", 5: "AF_APPLETALK",
		6: "AF_NETROM", 7: "AF_BRIDGE", 8: "AF_ATMPVC", 9: "AF_X25", 10: "AF_INET6", 11: "AF_ROSE",
		12: "AF_DECnet", 13: "AF_NETBEUI", 14: "AF_SECURITY", 15: "AF_KEY", 16: "AF_NETLINK",
		17: "AF_PACKET", 18: "AF_ASH", 19: "AF_ECONET", 20: "AF_ATMSVC", 21: "AF_RDS", 22: "AF_SNA",
		23: "AF_IRDA", 24: "AF_PPPOX", 25: "AF_WANPIPE", 26: "AF_LLC", 27: "AF_IB", 28: "AF_MPLS",
		29: "AF_CAN", 30: "AF_TIPC", 31: "AF_BLUETOOTH", 32: "AF_IUCV", 33: "AF_RXRPC", 34: "AF_ISDN",
		35: "AF_PHONET", 36: "AF_IEEE802154", 37: "AF_CAIF", 38: "AF_ALG", 39: "AF_NFC", 40: "AF_VSOCK",
		41: "AF_KCM", 42: "AF_QIPCRTR", 43: "AF_SMC", 44: "AF_XDP", 45: "AF_MCTP",
	}
	sockTypeNames = map[uint32]string{
		1: "SOCK_STREAM", 2: "SOCK_DGRAM", 3: "SOCK_RAW", 4: "SOCK_RDM", 5: "SOCK_SEQPACKET",
		6: "SOCK_DCCP", 10: "SOCK_PACKET",
	}
	ipProtoNames = map[uint32]string{
		0: "IPPROTO_IP", 1: "IPPROTO_ICMP", 2: "IPPROTO_IGMP", 4: "IPPROTO_IPIP", 6: "IPPROTO_TCP",
		8: "IPPROTO_EGP", 12: "IPPROTO_PUP", 17: "IPPROTO_UDP", 22: "IPPROTO_IDP", 29: "IPPROTO_TP",
		33: "IPPROTO_DCCP", 41: "IPPROTO_IPV6", 46: "IPPROTO_RSVP", 47: "IPPROTO_GRE", 50: "IPPROTO_ESP",
		51: "IPPROTO_AH", 58: "IPPROTO_ICMPV6", 92: "IPPROTO_MTP", 94: "IPPROTO_BEETPH", 98: "IPPROTO_ENCAP",
		103: "IPPROTO_PIM", 108: "IPPROTO_COMP", 115: "IPPROTO_L2TP", 132: "IPPROTO_SCTP",
		136: "IPPROTO_UDPLITE", 137: "IPPROTO_MPLS", 143: "IPPROTO_ETHERNET", 255: "IPPROTO_RAW",
		262: "IPPROTO_MPTCP",
	}
	netlinkNames = map[uint32]string{
		0: "NETLINK_ROUTE", 2: "NETLINK_USERSOCK", 4: "NETLINK_SOCK_DIAG", 5: "NETLINK_NFLOG",
		6: "NETLINK_XFRM", 7: "NETLINK_SELINUX", 8: "NETLINK_ISCSI", 9: "NETLINK_AUDIT",
		10: "NETLINK_FIB_LOOKUP", 11: "NETLINK_CONNECTOR", 12: "NETLINK_NETFILTER", 13: "NETLINK_IP6_FW",
		14: "NETLINK_DNRTMSG", 15: "NETLINK_KOBJECT_UEVENT", 16: "NETLINK_GENERIC",
		18: "NETLINK_SCSITRANSPORT", 19: "NETLINK_ECRYPTFS", 20: "NETLINK_RDMA", 21: "NETLINK_CRYPTO",
		22: "NETLINK_SMC",
	}
	cloneFlagNames = map[uint64]string{
		0x80: "CLONE_NEWTIME", 0x8000: "CLONE_PARENT", 0x20000: "CLONE_NEWNS", 0x2000000: "CLONE_NEWCGROUP",
		0x4000000: "CLONE_NEWUTS", 0x8000000: "CLONE_NEWIPC", 0x10000000: "CLONE_NEWUSER",
		0x20000000: "CLONE_NEWPID", 0x40000000: "CLONE_NEWNET",
	}
)
