package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
)

// maxAddrs is how many of a name's addresses the proxy tries.
const maxAddrs = 8

// refusedError is what the dialer's Control hook returns for an address
// the guard refuses.
type refusedError struct {
	ip  netip.Addr
	why string
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("address %s is refused: %s", e.ip, e.why)
}

func netipAddrPort(s string) (netip.AddrPort, error) { return netip.ParseAddrPort(s) }

// newResolver asks server (IP:PORT) and nothing else; "" is the first
// nameserver of /etc/resolv.conf at the time of the lookup.
func newResolver(server string) *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			to := server
			if to == "" {
				var err error
				if to, err = systemNameserver("/etc/resolv.conf"); err != nil {
					return nil, err
				}
			}
			var d net.Dialer
			return d.DialContext(ctx, network, to)
		},
	}
}

// systemNameserver returns the first nameserver of a resolv.conf, as
// IP:53.
func systemNameserver(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("network.resolver is empty and %s cannot be read: %w", path, err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == "nameserver" {
			ip, err := netip.ParseAddr(fields[1])
			if err == nil {
				return netip.AddrPortFrom(ip.WithZone(""), 53).String(), nil
			}
		}
	}
	return "", fmt.Errorf("network.resolver is empty and %s names no nameserver: set network.resolver to \"IP:PORT\"", path)
}

// dialResult is how a dial went: the connection, or the reason it failed
// with the verdict that reason carries.
type dialResult struct {
	up      net.Conn
	ip      string
	verdict string
	reason  string
	detail  string
}

// dial resolves t (unless it is an IP literal) and connects to the first
// of its addresses that the guard allows and that answers. The guard
// checks every address twice: before the connect, and in the dialer's
// Control hook on the address connect(2) gets.
func (p *Proxy) dial(ctx context.Context, t Target) dialResult {
	ctx, cancel := context.WithTimeout(ctx, p.opts.ConnectTimeout)
	defer cancel()
	addrs := []netip.Addr{t.IP}
	if !t.IsIP() {
		var err error
		// The trailing dot makes the name absolute: no search domains.
		addrs, err = p.resolver.LookupNetIP(ctx, "ip", t.Host+".")
		if err != nil || len(addrs) == 0 {
			return dialResult{verdict: Allowed, reason: ReasonResolveFailed, detail: lookupDetail(err)}
		}
	}
	if len(addrs) > maxAddrs {
		addrs = addrs[:maxAddrs]
	}
	d := net.Dialer{Control: p.control}
	var last dialResult
	refused := 0
	for _, a := range addrs {
		ip := a.WithZone("")
		if why := p.opts.Guard.Check(ip); why != "" {
			refused++
			last = dialResult{ip: ip.Unmap().String(), verdict: Blocked, reason: ReasonPrivateAddress, detail: why}
			continue
		}
		up, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(ip, uint16(t.Port)).String())
		var re *refusedError
		switch {
		case err == nil:
			return dialResult{up: up, ip: ip.Unmap().String(), verdict: Allowed}
		case errors.As(err, &re):
			refused++
			last = dialResult{ip: re.ip.String(), verdict: Blocked, reason: ReasonPrivateAddress, detail: re.why}
		default:
			last = dialResult{ip: ip.Unmap().String(), verdict: Allowed, reason: ReasonConnectFailed, detail: err.Error()}
		}
	}
	if refused > 0 && refused < len(addrs) && last.reason == ReasonPrivateAddress {
		last.detail += " (and the other addresses did not answer)"
	}
	return last
}

func lookupDetail(err error) string {
	if err == nil {
		return "the name has no address"
	}
	return err.Error()
}

// control is the dialer's hook: address is the one connect(2) gets.
func (p *Proxy) control(network, address string, _ syscall.RawConn) error {
	if network != "tcp4" && network != "tcp6" {
		return fmt.Errorf("network %s is not TCP", network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("connect address %q does not parse", address)
	}
	if why := p.opts.Guard.Check(ap.Addr()); why != "" {
		return &refusedError{ip: ap.Addr().Unmap(), why: why}
	}
	return nil
}
