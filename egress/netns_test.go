package egress

import (
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentjail/internal/systest"
)

// netnsProcess starts a process in a network namespace of its own and
// returns its /proc/PID/ns/net, open.
func netnsProcess(t testing.TB) (*os.File, int) {
	t.Helper()
	cmd := exec.Command("unshare", "--net", "sh", "-c", "ip link set lo up && exec sleep 60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if exe, _ := os.Readlink("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/exe"); strings.HasSuffix(exe, "sleep") {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	f, err := os.Open("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, cmd.Process.Pid
}

// The listener is inside the namespace: a process there reaches it at
// 127.0.0.1:3128, the daemon's own 127.0.0.1:3128 is another socket, and
// closing it frees the port.
func TestListenInNamespace(t *testing.T) {
	systest.Require(t, systest.Root)
	ns, pid := netnsProcess(t)
	l, err := ListenIn(ns)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		c, err := l.Accept()
		if err == nil {
			io.WriteString(c, "hello from the daemon\n")
			c.Close()
		}
	}()
	out, err := exec.Command("nsenter", "-t", strconv.Itoa(pid), "-n", "python3", "-c",
		"import socket; s=socket.create_connection(('127.0.0.1',3128)); print(s.recv(100).decode().strip())").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "hello from the daemon" {
		t.Fatalf("%q %v", out, err)
	}
	// This goroutine's thread is back in the daemon's namespace.
	self, _ := os.Readlink("/proc/thread-self/ns/net")
	init, _ := os.Readlink("/proc/self/ns/net")
	if self != init {
		t.Errorf("a thread stayed in %s", self)
	}
	// The same port again in the same namespace fails; after Close it works.
	if _, err := ListenIn(ns); err == nil || !strings.Contains(err.Error(), "bind") {
		t.Errorf("second listener: %v", err)
	}
	l.Close()
	l2, err := ListenIn(ns)
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	l2.Close()
	if c, err := net.DialTimeout("tcp", l.Addr().String(), 100*time.Millisecond); err == nil {
		c.Close() // the daemon's own namespace may have a 3128 of its own
	}
}

func BenchmarkListenIn(b *testing.B) {
	systest.Require(b, systest.Root)
	ns, _ := netnsProcess(b)
	b.ResetTimer()
	cpu0 := systest.SelfCPU()
	for range b.N {
		l, err := ListenIn(ns)
		if err != nil {
			b.Fatal(err)
		}
		l.Close()
	}
	b.ReportMetric(float64(systest.SelfCPU()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
}
