package nsjail

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A message with more fds than maxMsgFds is refused whole by the parent's
// reader: the kernel would otherwise cut the list (MSG_CTRUNC), and the
// reader would take the fds it got for what they are not. The init
// stage's reader (init_msg_linux.c) is TestInitReportsAnUnreadableConfig's.
func TestMessageWithTooManyFdsIsRefused(t *testing.T) {
	// Each reader owns (and closes) the receiving fd.
	readers := map[string]func(fd int) (msgType, []byte, []int, error){
		"parent": func(fd int) (msgType, []byte, []int, error) {
			require.NoError(t, unix.SetNonblock(fd, true))
			f := os.NewFile(uintptr(fd), "recv")
			defer f.Close()
			return readMsgFds(f)
		},
	}
	for name, read := range readers {
		for _, n := range []int{maxMsgFds, maxMsgFds + 1} {
			before := devNullFds()
			sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			require.NoError(t, err)
			send := os.NewFile(uintptr(sp[0]), "send")
			null, err := os.Open(os.DevNull)
			require.NoError(t, err)
			fds := make([]int, n)
			for i := range fds {
				fds[i] = int(null.Fd())
			}
			require.NoError(t, sendMsgFds(send, msgRequest, []byte("{}"), fds))
			typ, payload, got, err := read(sp[1])
			if n <= maxMsgFds {
				require.NoError(t, err, name)
				assert.Equal(t, msgRequest, typ)
				assert.Equal(t, "{}", string(payload))
				assert.Len(t, got, n)
				closeFds(got)
			} else {
				assert.ErrorContains(t, err, "more than", name)
				assert.Empty(t, got, name)
			}
			null.Close()
			send.Close()
			assert.Equal(t, before, devNullFds(), "%s: no received fd left open (%d sent)", name, n)
		}
	}
}

// Spec.Validate's caps keep every request in one message (MaxCodeBytes'
// promise): the largest spec it passes, by every cap at once, makes a
// run plan under maxMsg.
func TestLargestValidRequestFitsOneMessage(t *testing.T) {
	s := Spec{Limits: DefaultLimits(), Python: "/usr/bin/python3", Report: true, Collect: []string{"*"}}
	s.Limits.TmpBytes = MaxFilesBytes
	// Code: the program and MaxCodeFiles-1 code files of 255-byte names.
	per := MaxCodeBytes / MaxCodeFiles
	s.Program = make([]byte, MaxCodeBytes-per*(MaxCodeFiles-1))
	for i := range MaxCodeFiles - 1 {
		name := fmt.Sprintf("%0*d", maxNameBytes, i)
		s.CodeFiles = append(s.CodeFiles, File{Path: name, Content: make([]byte, per)})
	}
	// Files: paths of maxPathBytes bytes, all below one chain of
	// directories (so that as many files as possible fit with them).
	dir := strings.Repeat(strings.Repeat("d", maxNameBytes)+"/", maxPathBytes/(maxNameBytes+1))
	dirs := strings.Count(dir, "/")
	nfiles := MaxFiles - dirs
	perFile := MaxFilesBytes / nfiles
	for i := range nfiles {
		p := dir + fmt.Sprintf("%0*d", maxPathBytes-len(dir), i)
		s.Files = append(s.Files, File{Path: p, Content: make([]byte, perFile)})
	}
	// Env: up to MaxEnvBytes in variables of maxEnvVarBytes.
	s.Env = map[string]string{}
	for i := 0; (len(s.Env)+1)*(maxEnvVarBytes+1) <= MaxEnvBytes; i++ {
		name := fmt.Sprint("V", i)
		s.Env[name] = strings.Repeat("v", maxEnvVarBytes-len(name)-1)
	}
	require.NoError(t, s.Validate(), "the largest valid spec")
	n := len(requestPlan(requestConfigFor(&s, codeFiles(&s)), DefaultLimits().TmpBytes))
	t.Logf("run plan: %d bytes (%.0f%% of maxMsg)", n, 100*float64(n)/maxMsg)
	assert.LessOrEqual(t, n, maxMsg)
}

// A message too long for its length field (and for the init stage) is
// never sent: cut, its own bytes would be read as what follows it.
func TestMessageTooLargeIsNotSent(t *testing.T) {
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	a, b := os.NewFile(uintptr(sp[0]), "a"), os.NewFile(uintptr(sp[1]), "b")
	defer a.Close()
	defer b.Close()
	big := make([]byte, maxMsg+1)
	require.ErrorIs(t, writeMsg(a, msgRequest, big), errTooLarge)
	require.ErrorIs(t, sendMsgFds(a, msgRequest, big, nil), errTooLarge)
	require.NoError(t, unix.SetNonblock(sp[1], true))
	n, err := b.Read(make([]byte, 1))
	assert.Equal(t, 0, n, "nothing was written")
	assert.Error(t, err)
}

// Work may be added to a pending while it is waited for (a run ending as
// its Runner closes): Wait returns only once all of it has run.
func TestPendingWaitsForWorkAddedMeanwhile(t *testing.T) {
	var p pending
	var ran atomic.Int32
	release := make(chan struct{})
	p.Go(func() { <-release; ran.Add(1) })
	waited := make(chan struct{})
	go func() { p.Wait(); close(waited) }()
	time.Sleep(20 * time.Millisecond) // most likely waiting by now
	for range 100 {
		p.Go(func() { ran.Add(1) })
	}
	close(release)
	<-waited
	assert.Equal(t, int32(101), ran.Load())
	p.Go(func() { ran.Add(1) }) // and again after a Wait
	p.Wait()
	assert.Equal(t, int32(102), ran.Load())
}

// devNullFds counts this process's fds open on /dev/null: the fds the test
// sends and receives, and not those that other tests' jails, cleaned up in
// the background, open and close meanwhile (a count of every fd was
// thrown off by one under emulation).
func devNullFds() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	n := 0
	for _, e := range ents {
		if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); l == os.DevNull {
			n++
		}
	}
	return n
}
