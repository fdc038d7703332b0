package nsjail

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/seccomp"
)

// quietProbeProgram makes the calls that seccomp/quiet.go answers itself:
// glibc's AI_ADDRCONFIG netlink probe (through getaddrinfo), a netlink
// route socket, and preadv2 with RWF_NOWAIT on a shared file (/usr), which
// would tell whether anyone read it recently; plain preadv2 still works.
const quietProbeProgram = `import ctypes, errno, os, socket
libc = ctypes.CDLL(None, use_errno=True)
def t(f, *a):
    try: return "OK:%r" % (f(*a),)
    except OSError as e: return errno.errorcode.get(e.errno, str(e.errno))
print("gai", t(lambda: socket.getaddrinfo("localhost", 80, 0, socket.SOCK_STREAM, 0, socket.AI_ADDRCONFIG)[0][4][0]))
print("route", t(socket.socket, socket.AF_NETLINK, socket.SOCK_RAW, 0))
print("ifaces", t(socket.if_nameindex))
fd = os.open("/usr/bin/python3", os.O_RDONLY)
print("preadv2", t(os.preadv, fd, [bytearray(4)], 0))
print("preadv2-hipri", t(os.preadv, fd, [bytearray(4)], 0, os.RWF_HIPRI))
print("preadv2-nowait", t(os.preadv, fd, [bytearray(4)], 0, os.RWF_NOWAIT))
# The raw call: fd, iov, iovcnt, pos_l, pos_h, flags (x86_64).
buf = ctypes.create_string_buffer(4)
iov = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 4)
for flags in (0, 8):
    r = libc.syscall(ctypes.c_long(327), ctypes.c_long(fd), iov, ctypes.c_long(1), ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(flags))
    print("raw", flags, r if r >= 0 else errno.errorcode[ctypes.get_errno()])
w = os.open("/tmp/w", os.O_WRONLY | os.O_CREAT)
print("pwritev2-nowait", t(os.pwritev, w, [b"x"], 0, os.RWF_NOWAIT))
print("pwritev2", t(os.pwritev, w, [b"x"], 0, os.RWF_DSYNC))
`

// TestQuietProbes: the probes answered in the filter neither end a jail
// under on_forbidden_syscall "kill" nor show in its seccomp report, and get
// the errors a library falls back from (issue 37 item 4; issue 35 item 6).
func TestQuietProbes(t *testing.T) {
	for _, mode := range []seccomp.Mode{seccomp.ModeErrno, seccomp.ModeKill} {
		t.Run(mode.String(), func(t *testing.T) {
			res := jailRun(t, quietProbeProgram, func(s *Spec) { s.OnForbiddenSyscall = mode })
			okRun(t, res)
			assert.Nil(t, res.Seccomp, "a quiet probe is not a forbidden call")
			out := parseProbes(res)
			out.expect(t, "gai", "", "OK:'127.0.0.1'")
			out.expect(t, "route", "", "EAFNOSUPPORT")
			out.expect(t, "ifaces", "", "EAFNOSUPPORT")
			out.expect(t, "preadv2", "", "OK:4")
			out.expect(t, "preadv2-hipri", "", "OK:4", "ENOTSUP") // HIPRI: polled I/O, which ext4 may refuse itself
			out.expect(t, "preadv2-nowait", "", "ENOTSUP")
			out.expect(t, "raw 0", "", "4")
			out.expect(t, "raw 8", "", "ENOTSUP")
			out.expect(t, "pwritev2-nowait", "", "ENOTSUP")
			out.expect(t, "pwritev2", "", "OK:1")
		})
	}
}

// TestForbiddenCallDetail: the report names the arguments the filter
// forbade a call for (issue 37 item 5), in both modes.
func TestForbiddenCallDetail(t *testing.T) {
	code := `import socket
for fam, typ, proto in ((socket.AF_NETLINK, socket.SOCK_RAW, 9), (socket.AF_INET, socket.SOCK_RAW, 1),
                        (socket.AF_INET, socket.SOCK_DGRAM, 136), (socket.AF_NETLINK, socket.SOCK_RAW, 9)):
    try: socket.socket(fam, typ, proto)
    except OSError as e: print(e.errno)
`
	res := jailRun(t, code, nil)
	okRun(t, res)
	assert.Equal(t, "1\n1\n1\n1\n", string(res.Stdout))
	require.NotNil(t, res.Seccomp)
	assert.Equal(t, &seccomp.Report{Syscall: "socket", Number: 41, Detail: "AF_NETLINK, NETLINK_AUDIT", Calls: []seccomp.CallCount{
		{Syscall: "socket", Number: 41, Count: 2, Detail: "AF_NETLINK, NETLINK_AUDIT"},
		{Syscall: "socket", Number: 41, Count: 1, Detail: "AF_INET, SOCK_RAW"},
		{Syscall: "socket", Number: 41, Count: 1, Detail: "AF_INET, SOCK_DGRAM, IPPROTO_UDPLITE"},
	}}, res.Seccomp)

	res = jailRun(t, code, killOnForbidden)
	assert.Equal(t, KillSeccomp, res.KillReason)
	require.NotNil(t, res.Seccomp)
	assert.Equal(t, "AF_NETLINK, NETLINK_AUDIT", res.Seccomp.Detail)
	assert.Empty(t, res.Stdout)
}
