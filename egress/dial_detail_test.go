package egress

import (
	"net"
	"strings"
	"testing"
	"time"
)

// A failed lookup tells the program what failed, never the resolver's
// error: that names the host's nameserver.
// (Go's resolver names the nameserver of /etc/resolv.conf even when
// another one answered.)
func TestProxyResolveFailureHidesTheResolver(t *testing.T) {
	w := newWorld(t, nil, "unknown.test:HTTP")
	system, _ := systemNameserver("/etc/resolv.conf")
	for _, name := range []string{"nxdomain.test", "unknown.test"} {
		code, body := w.get(t, "http://"+name+":HTTP/")
		if code != 502 || !strings.Contains(body, "does not exist") || strings.Contains(body, w.dns.addr()) ||
			system != "" && strings.Contains(body, system) || strings.Contains(body, "lookup "+name) {
			t.Errorf("%s: %d %q", name, code, body)
		}
	}
	silent, err := net.ListenPacket("udp", "127.0.0.1:0") // answers nothing
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	w = newWorld(t, func(o *Options) {
		o.Resolver, o.ConnectTimeout = silent.LocalAddr().String(), 300*time.Millisecond
	})
	code, body := w.get(t, "http://up.test:HTTP/")
	if code != 502 || !strings.Contains(body, "timed out") || strings.Contains(body, "lookup up.test") {
		t.Errorf("timeout: %d %q", code, body)
	}
}
