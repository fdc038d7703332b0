package nsjail

// The seccomp filter in a jail: errno and kill modes, foreign ABIs, and
// ordinary Python unaffected.

import (
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/seccomp"
)

func TestSeccompErrnoModeNamesViolations(t *testing.T) {
	res := jailRun(t, `import ctypes, errno, threading
libc = ctypes.CDLL(None, use_errno=True)
def sc(f, *a):
    r = f(*a)
    return "OK" if r != -1 else errno.errorcode[ctypes.get_errno()]
print(sc(libc.unshare, 0x10000000), sc(libc.ptrace, 0, 0, 0, 0), sc(libc.ptrace, 0, 0, 0, 0))
t = threading.Thread(target=lambda: None); t.start(); t.join(); print("thread ok")`, nil)
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	assert.Equal(t, "EPERM EPERM EPERM\nthread ok\n", string(res.Stdout))
	require.NotNil(t, res.Seccomp)
	assert.Equal(t, "unshare", res.Seccomp.Syscall, "the first violation is on top")
	assert.Equal(t, 272, res.Seccomp.Number)
	require.Len(t, res.Seccomp.Calls, 2)
	assert.Equal(t, 1, res.Seccomp.Calls[0].Count)
	assert.Equal(t, "ptrace", res.Seccomp.Calls[1].Syscall)
	assert.Equal(t, 2, res.Seccomp.Calls[1].Count)
}

func TestSeccompKillMode(t *testing.T) {
	res := jailRun(t, `import ctypes
print("before", flush=True)
ctypes.CDLL(None).ptrace(0, 0, 0, 0)
print("after", flush=True)`, func(s *Spec) { s.OnForbiddenSyscall = seccomp.ModeKill })
	assert.Equal(t, StatusKilled, res.Status)
	assert.Equal(t, KillSeccomp, res.KillReason)
	assert.Equal(t, "before\n", string(res.Stdout), "the forbidden call never returned")
	require.NotNil(t, res.Seccomp)
	assert.Equal(t, "ptrace", res.Seccomp.Syscall)
}

func TestSeccompForeignABIKills(t *testing.T) {
	// i386 getpid through int 0x80, from machine code: always a kill.
	res := jailRun(t, `import ctypes, mmap
m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
m.write(bytes([0xb8, 20, 0, 0, 0, 0xcd, 0x80, 0xc3]))
f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
print("before", flush=True); f(); print("after")`, nil)
	// The filter notifies a foreign-ABI call; the supervisor ends the
	// jail before it answers: the call never returns.
	assert.Equal(t, StatusKilled, res.Status)
	assert.Equal(t, KillSeccomp, res.KillReason)
	assert.Equal(t, syscall.SIGKILL, res.Signal)
	assert.Equal(t, "before\n", string(res.Stdout))
	require.NotNil(t, res.Seccomp)
	assert.Equal(t, "i386", res.Seccomp.ABI)
	assert.Equal(t, 20, res.Seccomp.Number)
}

// A program that sends itself SIGSYS dies of it, and that is not a
// seccomp kill: only the supervisor's evidence (a notification) is.
func TestSelfSentSIGSYSIsNoSeccompKill(t *testing.T) {
	res := jailRun(t, "import os, signal\nsignal.signal(signal.SIGSYS, signal.SIG_DFL)\nos.kill(os.getpid(), signal.SIGSYS)", nil)
	assert.Equal(t, StatusSignaled, res.Status)
	assert.Equal(t, syscall.SIGSYS, res.Signal)
	assert.Equal(t, KillNone, res.KillReason)
	assert.Nil(t, res.Seccomp)
}

// corpus is ordinary Python that must not notice the jail or its filter.
const corpus = `import asyncio, decimal, hashlib, json, multiprocessing, os, random, re, socket, sqlite3, ssl, subprocess, tempfile, threading, time, zlib
def sq(x): return x * x
with multiprocessing.get_context("fork").Pool(2) as p: print(p.map(sq, range(5)))
t = threading.Thread(target=lambda: None); t.start(); t.join()
print(subprocess.run(["/bin/sh", "-c", "echo sh"], capture_output=True, text=True).stdout.strip())
db = sqlite3.connect(":memory:"); db.execute("create table t(x)"); db.execute("insert into t values (1)"); print(db.execute("select x from t").fetchall())
print(json.dumps({"a": [1, 2]}), re.sub("a", "b", "aa"), decimal.Decimal("1.1") + decimal.Decimal("2.2"))
print(zlib.decompress(zlib.compress(b"x" * 100)) == b"x" * 100, hashlib.sha256(b"").hexdigest()[:8])
ssl.create_default_context(); print("ssl ok")
async def main(): await asyncio.sleep(0.01); return "asyncio ok"
print(asyncio.run(main()))
with tempfile.NamedTemporaryFile() as f: f.write(b"x"); f.flush(); print(os.path.getsize(f.name))
a, b = socket.socketpair(); a.send(b"ping"); print(b.recv(4))
print(len(os.listdir("/")) > 0, random.random() < 1, time.monotonic() > 0)`

func TestSeccompNormalPythonUnaffected(t *testing.T) {
	res := jailRun(t, corpus, nil)
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	assert.Equal(t, "[0, 1, 4, 9, 16]\nsh\n[(1,)]\n{\"a\": [1, 2]} bb 3.3\nTrue e3b0c442\nssl ok\nasyncio ok\n1\nb'ping'\nTrue True True\n", string(res.Stdout))
	assert.Nil(t, res.Seccomp, "ordinary Python makes no forbidden call")
	// And the same output outside the jail.
	bare, err := exec.Command("/usr/bin/python3", "-I", "-c", corpus).Output()
	require.NoError(t, err)
	assert.Equal(t, string(bare), string(res.Stdout), "identical in and out of the jail")
}
