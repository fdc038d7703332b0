package nsjail

// The adversarial suite of docs/security.md (Part B): one subtest per
// case, TestAttacks/<ID>_<name>. Every snippet gets the A.3 prelude and
// prints "ID label RESULT" lines; each check asserts the case's Expected
// outcome and that its FAIL line did not happen. jailRun already performs
// the A.4 item 2 checks (no process under the jail's host uid, no cgroup
// directory, host mount count unchanged); runAttack adds item 3 (host
// hostname, /proc/modules, clock offset, a root-only canary file never read,
// our own fd count back at baseline) and, for the resource-exhaustion cases,
// item 4 (a concurrent canary job succeeds with normal latency). The suite's
// last subtest compares the hashes of the Python runtime and of this binary
// (the "daemon") with their values before the first case.
//
// Where agentjail's policy (seccomp/doc.go, nsjail/init_linux.go) differs from
// docs/security.md's reference profile T, the case says so in a comment; agentjail's
// behaviour is asserted only where it is at least as strict.
//
// Timing cases use 1–2 s wall and CPU limits instead of 10 s (the same
// properties, asserted relative to the limit) to keep the suite fast.

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// attackPrelude is docs/security.md A.3, prepended to every snippet.
const attackPrelude = `import ctypes, errno, os, signal, socket, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def _a(x): return ctypes.c_long(x) if isinstance(x, int) else x
def sc(nr, *args):                        # raw syscall -> "OK:<ret>" or errno name
    r = libc.syscall(_a(nr), *map(_a, args))
    return f"OK:{r}" if r != -1 else errno.errorcode.get(ctypes.get_errno(), "?")
def t(fn, *a, **k):                       # call -> "OK:<repr>" / errno name / exception name
    try: return ("OK:" + repr(fn(*a, **k)))[:160]
    except OSError as e: return errno.errorcode.get(e.errno, type(e).__name__)
    except Exception as e: return type(e).__name__
`

// runtimeTree is the Python runtime whose hash must not change (A.4 item 3):
// the interpreter, the standard library, dist-packages, and the purelib
// directory of Debian's python3 -I (F02 targets sitecustomize.py there).
var runtimeTree = []string{"/usr/bin/python3.11", "/usr/lib/python3.11", "/usr/lib/python3", "/usr/local/lib/python3.11"}

// canaryProgram is the concurrent canary job of A.4 item 4.
const (
	canaryProgram = "print(sum(range(10**6)))"
	canaryOutput  = "499999500000\n"
)

// attackEnv is what the harness fills into the snippets ({HOST_IP},
// {DAEMON_SOCK}, {DAEMON_CONF}) and the host-side sentinels.
type attackEnv struct {
	hostIP       string // a non-loopback address of this host
	daemonSock   string // a unix socket this test listens on: must be unreachable (ENOENT)
	abstractName string // an abstract unix socket this test listens on (other netns: unreachable)
	tcpPort      int    // a TCP listener on the host's 127.0.0.1: unreachable (the jail's lo is its own)
	accepted     atomic.Int32

	canaryPath    string // readable only by host root
	canaryContent string

	runtime, self treeManifest // A.4 item 3's sentinels, taken before the first case
}

// attack is one case of Part B.
type attack struct {
	id     string      // "R01_memory_bomb"
	code   string      // the snippet, without the prelude; "": testdata/attacks/<id>.py
	mod    func(*Spec) // limits for this case (DefaultLimits otherwise)
	canary bool        // run the A.4 item 4 canary job during the attack
	// check asserts the Expected outcome and the absence of the FAIL line.
	check func(t *testing.T, e *attackEnv, res *Result, out *probeOut)
	// host, when set, takes host-side readings before the run and returns
	// the check that compares them afterwards.
	host func(t *testing.T, e *attackEnv) func(t *testing.T, res *Result)
	// run replaces the single jailRun for cases of several jobs or of
	// features that are not there yet.
	run func(t *testing.T, r *Runner, e *attackEnv)
}

func TestAttacks(t *testing.T) {
	r := testRunner(t)
	e := newAttackEnv(t)
	// Warm up: the first run pays for the python check and page cache.
	jailRun(t, "pass", nil)
	baseline := canaryLatency(t, r)
	t.Logf("canary job alone: %v", baseline)

	start := time.Now()
	for _, a := range attackCases() {
		t.Run(a.id, func(t *testing.T) { runAttack(t, r, e, a, baseline) })
	}
	t.Run("A4_host_sentinels", func(t *testing.T) {
		e.runtime.unchanged(t, "the host's Python runtime", manifestTree(t, runtimeTree...))
		self, err := os.Executable()
		require.NoError(t, err)
		e.self.unchanged(t, "the daemon binary (this test binary)", manifestTree(t, self))
		assert.Zero(t, e.accepted.Load(), "a jail reached one of the host's listeners")
	})
	t.Logf("attack suite: %v", time.Since(start))
}

// runAttack runs one case and the host checks of A.4 items 3 (and 4).
func runAttack(t *testing.T, r *Runner, e *attackEnv, a attack, baseline time.Duration) {
	before := snapshotHost(t, r)
	defer func() { before.compare(t) }()
	if a.run != nil {
		a.run(t, r, e)
		return
	}
	var after func(*testing.T, *Result)
	if a.host != nil {
		after = a.host(t, e)
	}
	var canary <-chan canaryResult
	if a.canary {
		canary = startCanary(r, 500*time.Millisecond)
	}
	res := jailRun(t, e.fill(attackProgram(t, a)), a.mod)
	attackEnd := time.Now()
	e.noCanaryLeak(t, res)
	if canary != nil {
		checkCanary(t, <-canary, attackEnd, baseline)
	}
	if after != nil {
		after(t, res)
	}
	a.check(t, e, res, parseProbes(res))
}

// attackProgram is a's snippet: its code, or else its file in
// testdata/attacks (where the catalogue's programs are, to be read, linted
// and run by hand: python3 testdata/attacks/<id>.py after the
// placeholders in braces are filled in).
func attackProgram(t *testing.T, a attack) string {
	if a.code != "" {
		return a.code
	}
	b, err := os.ReadFile(filepath.Join("testdata", "attacks", a.id+".py"))
	require.NoError(t, err, "attack %s: its program", a.id)
	return string(b)
}

// e.fill replaces the harness's placeholders and prepends the prelude.
func (e *attackEnv) fill(code string) string {
	return attackPrelude + strings.NewReplacer(
		"{HOST_IP}", e.hostIP,
		"{DAEMON_SOCK}", e.daemonSock,
		"{DAEMON_CONF}", "agentjail/config.toml",
		// Extra probes of this suite (not in the catalogue's snippets).
		"{CANARY}", e.canaryPath,
		"{ABSTRACT}", e.abstractName,
		"{TCP_PORT}", strconv.Itoa(e.tcpPort),
	).Replace(code)
}

func newAttackEnv(t *testing.T) *attackEnv {
	e := &attackEnv{}
	e.hostIP = hostIPv4(t)

	dir, err := os.MkdirTemp("", "agentjail-attacks-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o700))
	t.Cleanup(func() { os.RemoveAll(dir) })

	e.daemonSock = filepath.Join(dir, "daemon.sock")
	e.listen(t, "unix", e.daemonSock)
	e.abstractName = "agentjail-attacks-" + randHex(8)
	e.listen(t, "unix", "@"+e.abstractName)
	tl := e.listen(t, "tcp", "127.0.0.1:0")
	e.tcpPort = tl.Addr().(*net.TCPAddr).Port

	e.canaryPath = filepath.Join(dir, "canary")
	e.canaryContent = "agentjail-canary-" + randHex(16)
	require.NoError(t, os.WriteFile(e.canaryPath, []byte(e.canaryContent), 0o600))

	e.runtime = manifestTree(t, runtimeTree...)
	self, err := os.Executable()
	require.NoError(t, err)
	e.self = manifestTree(t, self)
	return e
}

// listen opens a host listener that no jail may ever reach.
func (e *attackEnv) listen(t *testing.T, network, addr string) net.Listener {
	l, err := net.Listen(network, addr)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			e.accepted.Add(1)
			c.Close()
		}
	}()
	return l
}

// hostIPv4 is an address of this host that is not loopback ({HOST_IP}).
func hostIPv4(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Log("no non-loopback IPv4 address on this host; N02 uses 192.0.2.1")
	return "192.0.2.1"
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// noCanaryLeak: the root-only canary file's content never appears in a
// jail's output (A.4 item 3).
func (e *attackEnv) noCanaryLeak(t *testing.T, res *Result) {
	t.Helper()
	assert.NotContains(t, string(res.Stdout), e.canaryContent, "the host's root-only canary file was read")
	assert.NotContains(t, string(res.Stderr), e.canaryContent, "the host's root-only canary file was read")
}

// attackCases is Part B of docs/security.md, in its order.
func attackCases() []attack {
	var all []attack
	for _, group := range [][]attack{attacksResource(), attacksFilesystem(), attacksPrivilege(), attacksNetwork(), attacksLeaks(), attacksLifecycle(), attacksDaemon()} {
		all = append(all, group...)
	}
	return all
}
