package egress

import (
	"net/netip"
	"strings"
	"testing"
)

// The host's own public address is refused in every form that carries
// it: IPv4-mapped, NAT64 and 6to4, as in a check and through the proxy.
func TestGuardRefusesOwnAddressForms(t *testing.T) {
	own := netip.MustParseAddr("203.0.113.7")
	g := NewGuard(nil)
	g.ownAddrs = func() ([]netip.Addr, error) { return []netip.Addr{own}, nil }
	for _, a := range append(carriers(own), own) {
		if why := g.Check(a); !strings.Contains(why, "own") {
			t.Errorf("%s, a form of the host's own %s: %q", a, own, why)
		}
	}
	w := newWorld(t, func(o *Options) {
		g := NewGuard(nil)
		g.ownAddrs = func() ([]netip.Addr, error) { return []netip.Addr{own}, nil }
		o.Guard = g
	}, "own64.test:HTTP")
	w.dns.set("own64.test", netip.MustParseAddr("64:ff9b::cb00:7107"))
	if code, body := w.get(t, "http://own64.test:HTTP/"); code != 403 || !strings.Contains(body, "own") {
		t.Errorf("%d %q", code, body)
	}
	if c := only(t, w.run.Close()); c.Verdict != Blocked || c.Reason != ReasonPrivateAddress {
		t.Errorf("%+v", c)
	}
}

// A private_allow range that holds the host's own address does not allow
// the host: only the address listed itself does.
func TestGuardPrivateAllowRangeSparesOwn(t *testing.T) {
	own := netip.MustParseAddr("10.1.2.3")
	for list, want := range map[string]bool{"10.0.0.0/8": false, "10.1.2.3": true} {
		pa, err := ParsePrivateAllow([]string{list})
		if err != nil {
			t.Fatal(err)
		}
		g := NewGuard(pa)
		g.ownAddrs = func() ([]netip.Addr, error) { return []netip.Addr{own}, nil }
		if why := g.Check(own); (why == "") != want || !want && !strings.Contains(why, "own") {
			t.Errorf("private_allow %s: Check(%s) = %q", list, own, why)
		}
		if why := g.Check(netip.MustParseAddr("10.1.2.4")); !want && why != "" {
			t.Errorf("private_allow %s: 10.1.2.4 refused: %s", list, why)
		}
	}
}
