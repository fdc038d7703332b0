package egress

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Refused is one address range the proxy never connects to unless the
// operator lists it in private_allow.
type Refused struct {
	Prefix netip.Prefix
	What   string
}

// RefusedRanges are refused by default. IPv4-mapped (::ffff:0:0/96),
// NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses are read as the
// IPv4 address they carry and refused with it; the documentation ranges
// (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32) are not
// refused.
var RefusedRanges = []Refused{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified (this network)"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private (RFC 1918)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (carrier NAT, some cloud metadata)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (cloud metadata)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private (RFC 1918)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private (RFC 1918)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved and broadcast"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible (deprecated)"},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "IPv4-translated (SIIT)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("fc00::/7"), "unique local (private; fd00:ec2::254 is cloud metadata)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

var (
	nat64WellKnown = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
)

// ParsePrivateAllow reads private_allow: IPs and CIDRs.
func ParsePrivateAllow(entries []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, e := range entries {
		if strings.Contains(e, "/") {
			p, err := netip.ParsePrefix(e)
			if err != nil || p.Masked() != p {
				return nil, fmt.Errorf("private_allow entry %q is not a CIDR with no bits past its length (like \"10.0.0.0/8\" or \"fd00::/8\")", e)
			}
			out = append(out, unmapPrefix(p))
			continue
		}
		ip, err := netip.ParseAddr(e)
		if err != nil || ip.Zone() != "" {
			return nil, fmt.Errorf("private_allow entry %q is not an IP address or CIDR (like \"10.0.0.5\" or \"10.0.0.0/8\")", e)
		}
		ip = ip.Unmap()
		out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
	}
	return out, nil
}

// Guard decides which addresses the proxy may connect to.
type Guard struct {
	allow []netip.Prefix
	// ownAddrs lists the host's addresses (every interface of the
	// daemon's network namespace); a test may replace it.
	ownAddrs func() ([]netip.Addr, error)

	mu    sync.Mutex
	own   map[netip.Addr]bool
	ownAt time.Time
}

// ownRefresh is how long the list of the host's addresses is trusted.
const ownRefresh = time.Second

// NewGuard returns a guard that lets through the refused addresses that
// privateAllow lists.
func NewGuard(privateAllow []netip.Prefix) *Guard {
	return &Guard{allow: privateAllow, ownAddrs: interfaceAddrs}
}

// Check returns "" when the proxy may connect to ip, or why it may not.
func (g *Guard) Check(ip netip.Addr) string {
	if !ip.IsValid() || ip.Zone() != "" {
		return "an address with a zone or no address"
	}
	ip = ip.Unmap()
	if g.listed(ip) {
		return ""
	}
	if why := classify(ip); why != "" {
		return why
	}
	if g.isOwn(ip) {
		return "one of this host's own addresses"
	}
	return ""
}

func (g *Guard) listed(ip netip.Addr) bool {
	for _, p := range g.allow {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// classify says why ip is refused by default, or "".
func classify(ip netip.Addr) string {
	ip = ip.Unmap()
	if v4, form, ok := embeddedV4(ip); ok {
		if why := classify(v4); why != "" {
			return form + " of " + v4.String() + ", " + why
		}
	}
	for _, r := range RefusedRanges {
		if r.Prefix.Contains(ip) {
			return r.What
		}
	}
	return ""
}

// embeddedV4 returns the IPv4 address a NAT64 or 6to4 address carries.
func embeddedV4(ip netip.Addr) (netip.Addr, string, bool) {
	b := ip.As16()
	switch {
	case nat64WellKnown.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), "the NAT64 form", true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), "the 6to4 form", true
	}
	return netip.Addr{}, "", false
}

// isOwn says whether ip is one of the host's addresses. When the list
// cannot be read and no earlier one is known, every address counts as
// the host's own: the guard fails closed.
func (g *Guard) isOwn(ip netip.Addr) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.own == nil || time.Since(g.ownAt) > ownRefresh {
		addrs, err := g.ownAddrs()
		switch {
		case err != nil && g.own == nil:
			return true
		case err == nil:
			g.own = map[netip.Addr]bool{}
			for _, a := range addrs {
				g.own[a.Unmap()] = true
			}
			g.ownAt = time.Now()
		}
	}
	return g.own[ip]
}

func interfaceAddrs() ([]netip.Addr, error) {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out, nil
}
