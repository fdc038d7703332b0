package nsjail

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// ptyProgram uses the jail's pseudo-terminals as programs do: openpty,
// pty.fork (a child with the pty as its controlling terminal), termios;
// then takes as many as it can, and tries TIOCSTI.
const ptyProgram = `import errno, fcntl, os, pty, termios
print("ls", sorted(os.listdir("/dev/pts")))
m, s = os.openpty()
print("tty", os.ttyname(s), os.isatty(s))
os.write(m, b"hi\n"); print("read", os.read(s, 10))
attrs = termios.tcgetattr(s); attrs[3] &= ~termios.ECHO; termios.tcsetattr(s, termios.TCSANOW, attrs)
pid, fd = pty.fork()
if pid == 0:
    print("child", os.ttyname(0), os.getsid(0) == os.getpid(), flush=True)
    os._exit(0)
out = b""
while True:
    try: b = os.read(fd, 100)
    except OSError: break
    if not b: break
    out += b
os.waitpid(pid, 0)
print("fork", out.decode().strip())
n = 2
try:
    while True: os.openpty(); n += 1
except OSError as e: print("most", n, errno.errorcode[e.errno])
try: fcntl.ioctl(m, termios.TIOCSTI, b"x"); print("TIOCSTI OK")
except OSError as e: print("TIOCSTI", errno.errorcode[e.errno])
`

// A jail has pseudo-terminals of its own (issue 37 item 2): a fresh
// devpts instance per run and per session, at most jailPtys, TIOCSTI
// still refused.
func TestJailPtys(t *testing.T) {
	inRunAndSession(t, ptyProgram, nil, func(t *testing.T, out string) {
		assert.Contains(t, out, "ls ['ptmx']\n", "a fresh instance: no pty of anyone else")
		assert.Contains(t, out, "tty /dev/pts/0 True\n")
		assert.Contains(t, out, "read b'hi\\n'\n")
		assert.Contains(t, out, "fork child /dev/pts/1 True\n")
		// pty.fork's pty is closed once its child has gone: n counts
		// the ones held, up to max.
		assert.Contains(t, out, "most "+strconv.Itoa(jailPtys)+" ENOSPC\n")
		assert.Contains(t, out, "TIOCSTI EPERM\n")
	})
}

// ptyHolder holds pts/0 of its jail for a while; ptyLooker, in another
// jail meanwhile, looks for it. Each says when it held or looked, and
// which devpts it has.
const (
	ptyHolder = `import os, time
m, s = os.openpty()
print("held", os.ttyname(s), time.time(), os.stat("/dev/pts").st_dev, flush=True)
time.sleep(5)
print("until", time.time())
`
	ptyLooker = `import errno, os, time
def t(f, *a):
    try: f(*a); return "OK"
    except OSError as e: return errno.errorcode[e.errno]
print("at", time.time())
print("ls", sorted(os.listdir("/dev/pts")))
print("open", t(os.open, "/dev/pts/0", os.O_RDWR | os.O_NOCTTY))
print("host", t(os.open, "/dev/pts/HOSTPTY", os.O_RDWR | os.O_NOCTTY))
m, s = os.openpty()
print("mine", os.ttyname(s), os.stat("/dev/pts").st_dev)
`
)

// A jail's ptys are its own: another jail running at the same time, a
// run's or a session's (in warm mode, forks of the same zygote), does not
// see them, cannot open them, and has its own devpts, as the host has; a
// pty of the host's is not reachable either.
func TestJailPtysAreItsOwn(t *testing.T) {
	testRunner(t)
	host, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	defer host.Close()
	pn, err := unix.IoctlGetUint32(int(host.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat("/dev/pts", &st))
	code := strings.ReplaceAll(ptyLooker, "HOSTPTY", strconv.Itoa(int(pn)))
	// The lookers must look while the holder holds: on a loaded host a
	// jail may start late, and then the case is tried again.
	for try := 1; ; try++ {
		overlap := ptysAreItsOwn(t, code, strconv.FormatUint(st.Dev, 10))
		if overlap == "" || t.Failed() {
			return
		}
		if try == 3 {
			t.Fatalf("three times, a looker did not look while the holder held its pty: %s", overlap)
		}
		t.Logf("try %d: %s; again", try, overlap)
	}
}

// ptysAreItsOwn is one try of TestJailPtysAreItsOwn: "" when the lookers
// looked while the holder held its pty, else why not.
func ptysAreItsOwn(t *testing.T, code, hostDev string) string {
	var wg sync.WaitGroup
	var holder *Result
	wg.Add(1)
	go func() {
		defer wg.Done()
		holder = jailRun(t, ptyHolder, nil)
	}()
	time.Sleep(1500 * time.Millisecond)
	looker := jailRun(t, code, nil)
	okRun(t, looker)
	// And a session's call, in a jail started meanwhile.
	sess := startSession(t, nil)
	call := sessionCall(t, sess, code, nil)
	assert.Equal(t, StatusOK, call.Status)
	wg.Wait()
	okRun(t, holder)
	h := regexp.MustCompile(`held /dev/pts/0 ([0-9.]+) (\d+)\nuntil ([0-9.]+)`).FindStringSubmatch(string(holder.Stdout))
	require.NotNil(t, h, "holder: %s", holder.Stdout)
	from, _ := strconv.ParseFloat(h[1], 64)
	until, _ := strconv.ParseFloat(h[3], 64)
	assert.NotEqual(t, hostDev, h[2], "a jail has the host's devpts")
	overlap := ""
	for _, out := range []string{string(looker.Stdout), string(call.Stdout)} {
		l := regexp.MustCompile(`at ([0-9.]+)\nls \['ptmx'\]\nopen ENOENT\nhost ENOENT\nmine /dev/pts/0 (\d+)\n`).FindStringSubmatch(out)
		require.NotNil(t, l, "looker: %s", out)
		assert.NotEqual(t, h[2], l[2], "two jails, one devpts")
		assert.NotEqual(t, hostDev, l[2], "a jail has the host's devpts")
		if at, _ := strconv.ParseFloat(l[1], 64); !(from < at && at < until) {
			overlap = fmt.Sprintf("held from %.3f to %.3f, looked at %.3f", from, until, at)
		}
	}
	return overlap
}
