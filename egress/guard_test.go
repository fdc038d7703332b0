package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func noOwn() ([]netip.Addr, error) { return nil, nil }

// Every refused range, at its first and last address, and in every
// form that carries an IPv4 address: v4-mapped, NAT64, 6to4.
func TestGuardRefusesEveryRange(t *testing.T) {
	g := NewGuard(nil)
	g.ownAddrs = noOwn
	for _, r := range RefusedRanges {
		first := r.Prefix.Addr()
		last := lastAddr(r.Prefix)
		for _, a := range []netip.Addr{first, last} {
			if why := g.Check(a); why == "" {
				t.Errorf("%s (%s) allowed", a, r.What)
			}
			if a.Is4() {
				for _, form := range carriers(a) {
					if why := g.Check(form); why == "" {
						t.Errorf("%s, a form of %s (%s), allowed", form, a, r.What)
					}
				}
			}
		}
	}
	for _, s := range []string{"169.254.169.254", "fd00:ec2::254", "::ffff:169.254.169.254",
		"64:ff9b::a9fe:a9fe", "64:ff9b:1::1", "::ffff:127.0.0.1", "::127.0.0.1", "::", "::1",
		"100.100.100.200", "255.255.255.255", "fe80::1", "ff02::1", "0.1.2.3"} {
		if why := g.Check(netip.MustParseAddr(s)); why == "" {
			t.Errorf("%s allowed", s)
		}
	}
	for _, s := range []string{"192.0.2.1", "198.51.100.7", "203.0.113.9", "2001:db8::1",
		"::ffff:203.0.113.9", "64:ff9b::cb00:7109", "2002:cb00:7109::1", "8.8.8.8", "2606:4700::1111"} {
		if why := g.Check(netip.MustParseAddr(s)); why != "" {
			t.Errorf("%s refused: %s", s, why)
		}
	}
}

func carriers(v4 netip.Addr) []netip.Addr {
	b := v4.As4()
	mapped := netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: b[0], 13: b[1], 14: b[2], 15: b[3]})
	nat64 := netip.AddrFrom16([16]byte{0: 0, 1: 0x64, 2: 0xff, 3: 0x9b, 12: b[0], 13: b[1], 14: b[2], 15: b[3]})
	six := netip.AddrFrom16([16]byte{0: 0x20, 1: 0x02, 2: b[0], 3: b[1], 4: b[2], 5: b[3], 15: 1})
	return []netip.Addr{mapped, nat64, six}
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func TestGuardPrivateAllow(t *testing.T) {
	allow, err := ParsePrivateAllow([]string{"10.0.0.5", "192.168.0.0/16", "::ffff:127.0.0.1", "fd00:ec2::/64"})
	if err != nil {
		t.Fatal(err)
	}
	g := NewGuard(allow)
	g.ownAddrs = noOwn
	for _, s := range []string{"10.0.0.5", "::ffff:10.0.0.5", "192.168.7.7", "127.0.0.1", "fd00:ec2::254"} {
		if why := g.Check(netip.MustParseAddr(s)); why != "" {
			t.Errorf("%s is listed but refused: %s", s, why)
		}
	}
	for _, s := range []string{"10.0.0.6", "127.0.0.2", "169.254.169.254"} {
		if why := g.Check(netip.MustParseAddr(s)); why == "" {
			t.Errorf("%s is not listed but allowed", s)
		}
	}
	for _, bad := range []string{"10.0.0.5/8", "example.com", "10.0.0.256", "fe80::1%eth0"} {
		if _, err := ParsePrivateAllow([]string{bad}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestGuardRefusesOwnAddresses(t *testing.T) {
	g := NewGuard(nil)
	g.ownAddrs = func() ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("203.0.113.1"), netip.MustParseAddr("2001:db8::1")}, nil
	}
	for _, s := range []string{"203.0.113.1", "::ffff:203.0.113.1", "2001:db8::1"} {
		if why := g.Check(netip.MustParseAddr(s)); !strings.Contains(why, "own") {
			t.Errorf("%s: %q", s, why)
		}
	}
	if why := g.Check(netip.MustParseAddr("203.0.113.2")); why != "" {
		t.Errorf("203.0.113.2: %q", why)
	}
	// The real list: this machine's loopback is among them anyway.
	if why := NewGuard(nil).Check(netip.MustParseAddr("127.0.0.1")); why == "" {
		t.Error("127.0.0.1 allowed")
	}
}
