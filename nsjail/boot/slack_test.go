//go:build linux && cgo

package boot

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"agentjail/internal/systest"
	"agentjail/nsjail/internal/wire"
)

// TestOnlySysmonHasTheLargeTimerSlack: slack_linux.c gives the Go
// runtime's sysmon thread wire.SysmonSlackNS and every other thread the main
// thread's slack. It finds sysmon as the first thread the runtime makes;
// this test finds it by what it does: it is the only thread of the
// runtime that sleeps in nanosleep (runtime.usleep), polling while a
// goroutine runs. This test binary links slack_linux.c like the daemon.
// Root: reading another thread's timerslack_ns takes CAP_SYS_NICE.
func TestOnlySysmonHasTheLargeTimerSlack(t *testing.T) {
	systest.Require(t, systest.Root)
	mainSlack := timerSlack(t, os.Getpid())
	want := max(mainSlack, wire.SysmonSlackNS)
	if mainSlack >= wire.SysmonSlackNS {
		t.Logf("the main thread's slack %d ns is already at least %d: nothing to tell apart", mainSlack, wire.SysmonSlackNS)
	}

	// A busy goroutine keeps sysmon polling (it sleeps deep only while
	// every P is idle).
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			unix.Getppid()
		}
	}()
	defer func() { stop.Store(true); <-done }()

	// Other threads pass through nanosleep too, for microseconds (the
	// scheduler's usleep while it steals work): sysmon is the one seen
	// there most, and often (a busy host only makes it take longer).
	seen := map[int]int{}
	sysmon := -1
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && (sysmon < 0 || seen[sysmon] < 50); {
		for _, tid := range systest.ThreadsInSyscall(t, unix.SYS_NANOSLEEP) {
			if seen[tid]++; sysmon < 0 || seen[tid] > seen[sysmon] {
				sysmon = tid
			}
		}
	}
	if sysmon < 0 {
		t.Fatal("no thread was seen in nanosleep in 10 s: does Go's sysmon still poll with usleep?")
	}
	if got := timerSlack(t, sysmon); got != want {
		t.Errorf("thread %d, in nanosleep most often (%d of the samples that saw any: %v), has a timer slack of %d ns, want sysmon's %d",
			sysmon, seen[sysmon], seen, got, want)
	}
	if mainSlack >= wire.SysmonSlackNS {
		return
	}
	for _, tid := range systest.Threads(t) {
		if got := timerSlack(t, tid); tid != sysmon && got >= 0 && got != mainSlack {
			t.Errorf("thread %d (not sysmon) has a timer slack of %d ns, want the main thread's %d", tid, got, mainSlack)
		}
	}
}

// timerSlack is thread tid's timer slack in nanoseconds (-1: it has
// ended).
func timerSlack(t *testing.T, tid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/timerslack_ns")
	if os.IsNotExist(err) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestThreadsSysmonMakesDoNotInheritItsSlack: a thread starts with its
// creator's slack, and sysmon starts threads for the runtime; each thread
// made through pthread_create sets the main thread's slack for itself.
func TestThreadsSysmonMakesDoNotInheritItsSlack(t *testing.T) {
	for _, creator := range []int{wire.SysmonSlackNS, 7_000_000} {
		got, mainSlack := SlackOfAThreadMadeBy(creator)
		if mainSlack <= 0 || mainSlack == creator {
			t.Fatalf("the main thread's slack as slack_linux.c read it is %d ns: nothing to tell apart", mainSlack)
		}
		if got != mainSlack {
			t.Errorf("a thread made by one with a slack of %d ns has %d ns, want the main thread's %d", creator, got, mainSlack)
		}
	}
}
