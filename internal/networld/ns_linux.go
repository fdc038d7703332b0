package networld

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// InNS runs fn on an OS thread that entered the network namespace
// /run/netns/name. The thread goes back to its own namespace afterwards;
// if it cannot, it is never given back and ends with fn's goroutine (or,
// the main thread, is parked for good by the runtime), so no other
// goroutine ever runs in that namespace. Sockets fn makes stay in the
// namespace wherever they are used afterwards.
func InNS(name string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer own.Close()
		f, err := os.Open("/run/netns/" + name)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns into %s: %w", name, err)
			return // still locked: the thread ends with this goroutine
		}
		err = fn()
		if unix.Setns(int(own.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// ListenIn opens a TCP listener in namespace ns.
func ListenIn(ns, addr string) (l net.Listener, err error) {
	err = InNS(ns, func() error {
		l, err = net.Listen("tcp", addr)
		return err
	})
	return l, err
}

// DialIn connects from namespace ns.
func DialIn(ctx context.Context, ns, network, addr string) (c net.Conn, err error) {
	err = InNS(ns, func() error {
		c, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// ResolverIn is a resolver that asks the world's DNS server from ns.
func (w *World) ResolverIn(ns string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return DialIn(ctx, ns, network, net.JoinHostPort(DNSAddr, "53"))
	}}
}

// ClientIn is an HTTP client whose connections are made from namespace ns
// (without any proxy), whose names are resolved by the world's DNS
// server, and which trusts the world's CA.
func (w *World) ClientIn(ns string) *http.Client {
	r := w.ResolverIn(ns)
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if net.ParseIP(host) == nil {
			ips, err := r.LookupHost(ctx, host)
			if err != nil {
				return nil, err
			}
			host = ips[0]
		}
		return DialIn(ctx, ns, network, net.JoinHostPort(host, port))
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		Proxy: nil, DialContext: dial, TLSClientConfig: &tls.Config{RootCAs: w.CA},
		DisableKeepAlives: true,
	}}
}

// GetIn fetches url from namespace ns (see ClientIn) and returns the
// body, or an error that says what failed.
func (w *World) GetIn(ns, url string) (string, error) {
	resp, err := w.ClientIn(ns).Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return string(b), fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), err
}

// ip runs the ip command.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// nsInode is the inode of the namespace file /run/netns/name (0 when
// there is none).
func nsInode(name string) uint64 {
	var st unix.Stat_t
	if unix.Stat("/run/netns/"+name, &st) != nil {
		return 0
	}
	return st.Ino
}

// processesIn lists the pids of processes whose network namespace has
// inode ino.
func processesIn(ino uint64) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+e.Name()+"/ns/net", &st) == nil && st.Ino == ino {
			pids = append(pids, pid)
		}
	}
	return pids
}
