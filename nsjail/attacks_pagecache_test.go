package nsjail

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// pageCacheAttack is I11 of docs/security.md's catalogue: a jail asks
// whether a file it shares with other jails and the host (/usr) is in the
// page cache, which tells whether anyone read it recently. preadv2 with
// RWF_NOWAIT reads only what is cached: the filter answers it EOPNOTSUPP
// (seccomp/quiet.go). cachestat counts cached pages: the kernel refuses it
// on a file the caller cannot write. (mincore on such a file's mapping
// reports every page resident, whatever is cached: Linux 5.0.)
func pageCacheAttack() attack {
	return attack{
		id: "I11_page_cache_probe",
		code: `p = "/usr/lib/os-release" if os.path.exists("/usr/lib/os-release") else sys.executable
fd = os.open(p, os.O_RDONLY)
print("I11 preadv2-nowait", t(os.preadv, fd, [bytearray(64)], 0, os.RWF_NOWAIT))
buf = ctypes.create_string_buffer(64)
iov = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 64)
print("I11 raw-nowait", sc(327, fd, iov, 1, 0, 0, 8))          # preadv2(fd, iov, 1, pos_l, pos_h, RWF_NOWAIT)
print("I11 raw-nowait-hipri", sc(327, fd, iov, 1, 0, 0, 9))
print("I11 raw-plain", sc(327, fd, iov, 1, 0, 0, 0))
rng = ctypes.create_string_buffer(struct.pack("QQ", 0, 0))
print("I11 cachestat", sc(451, fd, rng, ctypes.create_string_buffer(40), 0))
`,
		host: func(t *testing.T, e *attackEnv) func(*testing.T, *Result) {
			// Cached for sure: the host has just read it.
			readOrErr("/usr/lib/os-release")
			return nil
		},
		check: func(t *testing.T, e *attackEnv, res *Result, out *probeOut) {
			okRun(t, res)
			out.expect(t, "I11 preadv2-nowait", "", "ENOTSUP")
			out.expect(t, "I11 raw-nowait", "", "ENOTSUP")
			out.expect(t, "I11 raw-nowait-hipri", "", "ENOTSUP")
			assert.Regexp(t, `^OK:\d+$`, out.line(t, "I11 raw-plain"), "preadv2 without RWF_NOWAIT works")
			out.expect(t, "I11 cachestat", "", "EPERM", "ENOSYS")
			assert.Nil(t, res.Seccomp, "answered in the filter, not reported")
		},
	}
}
