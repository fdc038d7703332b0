package nsjail

import (
	"testing"
	"time"

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

// librarySurvey uses the standard library's network, process and
// concurrency modules as programs do, probes included (getaddrinfo with
// AI_ADDRCONFIG; uuid's node lookup; multiprocessing's three start methods).
const librarySurvey = `import asyncio, concurrent.futures as cf, http.client, multiprocessing as mp, socket, sqlite3, ssl, subprocess, urllib.request, uuid
def refused(f):
    try: f()
    except OSError: return "refused"
    return "reached"
if __name__ == "__main__":
    print(refused(lambda: urllib.request.urlopen("http://localhost:1/", timeout=2)))
    print(refused(lambda: http.client.HTTPConnection("localhost", 1, timeout=2).request("GET", "/")))
    ssl.create_default_context().load_default_certs()
    print(socket.getaddrinfo("localhost", 80, 0, socket.SOCK_STREAM, 0, socket.AI_ADDRCONFIG)[0][4][0])
    async def main():
        await asyncio.get_running_loop().getaddrinfo("localhost", 80, flags=socket.AI_ADDRCONFIG)
        srv = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
        r, w = await asyncio.open_connection(*srv.sockets[0].getsockname()); w.close(); srv.close()
        p = await asyncio.create_subprocess_exec("/bin/true"); await p.wait()
    asyncio.run(main())
    for method in ("fork", "spawn", "forkserver"):
        with mp.get_context(method).Pool(2) as p: assert p.map(abs, [-1, -2]) == [1, 2]
    with mp.Manager() as m: d = m.dict(); d[1] = 2
    q = mp.Queue(); q.put(1); assert q.get() == 1
    with cf.ProcessPoolExecutor(2) as ex: assert list(ex.map(abs, [-1])) == [1]
    subprocess.run("echo hi | cat", shell=True, check=True, capture_output=True)
    uuid.uuid1(); uuid.getnode()
    sqlite3.connect("/tmp/db").execute("create table t(x)")
    a, b = socket.socketpair(); a.send(b"x"); assert b.recv(1) == b"x"
    print("done")
`

// TestLibrariesMakeNoForbiddenCall: what programs commonly use makes no
// forbidden call, so on_forbidden_syscall "kill" ends none of them (issue
// 37 item 4: the netlink probe of getaddrinfo did).
func TestLibrariesMakeNoForbiddenCall(t *testing.T) {
	res := jailRun(t, librarySurvey, func(s *Spec) {
		killOnForbidden(s)
		s.Limits.WallTime, s.Limits.CPUTime = time.Minute, time.Minute
	})
	okRun(t, res)
	assert.Nil(t, res.Seccomp)
	assert.Equal(t, "refused\nrefused\n127.0.0.1\ndone\n", string(res.Stdout))

	res = runIn(t, testRunner(t), scienceSpec(t, `import numpy, pandas, matplotlib
import matplotlib.pyplot as plt
a = numpy.random.rand(200, 200); numpy.linalg.svd(a)
df = pandas.DataFrame({"a": [1, 2, 3]}); df.to_csv("/tmp/x.csv"); pandas.read_csv("/tmp/x.csv")
pandas.date_range("2020-01-01", periods=3, tz="Europe/Paris")
plt.plot([1, 2]); plt.savefig("/tmp/p.png"); plt.savefig("/tmp/p.pdf")
print("done")
`, killOnForbidden))
	okRun(t, res)
	assert.Nil(t, res.Seccomp)
	assert.Equal(t, "done\n", string(res.Stdout))
}
