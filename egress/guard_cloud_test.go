package egress

import (
	"net/netip"
	"testing"
)

// Cloud platforms' metadata and agent addresses are refused, in every
// form, whichever range holds them.
func TestGuardRefusesCloudPlatformAddresses(t *testing.T) {
	g := NewGuard(nil)
	g.ownAddrs = noOwn
	for _, s := range []string{"169.254.169.254", "168.63.129.16", "100.100.100.200", "192.0.0.192"} {
		a := netip.MustParseAddr(s)
		for _, form := range append(carriers(a), a) {
			if why := g.Check(form); why == "" {
				t.Errorf("%s (a form of %s) allowed", form, a)
			}
		}
	}
	for _, s := range []string{"fd00:ec2::254", "fd20:ce::254"} {
		if why := g.Check(netip.MustParseAddr(s)); why == "" {
			t.Errorf("%s allowed", s)
		}
	}
}
