package egress

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
)

// Target is what a client asked to reach: a host name or an IP literal,
// and a port.
type Target struct {
	// Host is the name in lower case without a trailing dot, or the IP
	// literal in its canonical form (whatever form the client wrote).
	Host string
	// IP is set when the client wrote an IP literal.
	IP   netip.Addr
	Port int
}

// IsIP says whether the client named the host by an IP literal.
func (t Target) IsIP() bool { return t.IP.IsValid() }

// HostPort is the target as host:port, IPv6 literals in brackets.
func (t Target) HostPort() string {
	if t.IP.Is6() {
		return "[" + t.Host + "]:" + strconv.Itoa(t.Port)
	}
	return t.Host + ":" + strconv.Itoa(t.Port)
}

var (
	errNoPort  = errors.New("has no port")
	errBadPort = errors.New("has a port that is not a number from 1 to 65535")
	errBadHost = errors.New("is not a host name or an IP address")
	errNumeric = errors.New("looks like an IP address in a form that is refused")
)

// parseTarget reads "host:port", "[v6]:port" or, when defaultPort is not 0,
// a host alone.
func parseTarget(hostport string, defaultPort int) (Target, error) {
	host, portText, err := splitHostPort(hostport)
	if err != nil {
		return Target{}, err
	}
	port := defaultPort
	if portText != "" || defaultPort == 0 {
		if port, err = parsePort(portText); err != nil {
			return Target{}, err
		}
	}
	name, ip, err := parseHost(host)
	if err != nil {
		return Target{}, err
	}
	if ip.IsValid() {
		return Target{Host: ip.String(), IP: ip, Port: port}, nil
	}
	return Target{Host: name, Port: port}, nil
}

// splitHostPort splits at the last colon outside brackets; the port is
// "" when there is none.
func splitHostPort(s string) (host, port string, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", errBadHost
		}
		host, rest := s[1:end], s[end+1:]
		if !strings.Contains(host, ":") {
			return "", "", errBadHost
		}
		if rest == "" {
			return host, "", nil
		}
		if rest[0] != ':' {
			return "", "", errBadHost
		}
		return host, rest[1:], portPresent(rest[1:])
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s, "", nil
	}
	if strings.IndexByte(s[:i], ':') >= 0 {
		return "", "", errBadHost // an IPv6 literal needs brackets
	}
	return s[:i], s[i+1:], portPresent(s[i+1:])
}

func portPresent(p string) error {
	if p == "" {
		return errNoPort
	}
	return nil
}

func parsePort(s string) (int, error) {
	if s == "" {
		return 0, errNoPort
	}
	if len(s) > 5 {
		return 0, errBadPort
	}
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, errBadPort
		}
		n = n*10 + int(c-'0')
	}
	if n < 1 || n > 65535 {
		return 0, errBadPort
	}
	return n, nil
}

// parseHost returns a normalised name, or the address of an IP literal.
// Text that looks numeric (a digit first, then only hex digits, x and
// dots) must be an address as inet_aton reads it: "2130706433",
// "0x7f.1", "0177.0.0.1" are 127.0.0.1, and a numeric text inet_aton
// refuses is refused here rather than sent to a resolver.
func parseHost(h string) (string, netip.Addr, error) {
	if h == "" {
		return "", netip.Addr{}, errBadHost
	}
	if strings.Contains(h, ":") {
		ip, err := netip.ParseAddr(h)
		if err != nil || ip.Zone() != "" || !ip.Is6() {
			return "", netip.Addr{}, errBadHost
		}
		return "", ip, nil
	}
	if looksNumeric(h) {
		ip, ok := parseInetAton(h)
		if !ok {
			return "", netip.Addr{}, errNumeric
		}
		return "", ip, nil
	}
	name := strings.ToLower(strings.TrimSuffix(h, "."))
	if !validName(name) {
		return "", netip.Addr{}, errBadHost
	}
	return name, netip.Addr{}, nil
}

func looksNumeric(s string) bool {
	if s[0] < '0' || s[0] > '9' {
		return false
	}
	for _, c := range []byte(s) {
		if !isHex(c) && c != '.' && c != 'x' && c != 'X' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// validName accepts DNS names: labels of 1 to 63 letters, digits, '-' and
// '_', 253 characters at most, no label starting or ending with '-'.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range []byte(label) {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// parseInetAton reads an IPv4 address as glibc's inet_aton does: one to
// four parts separated by dots, each decimal, octal (leading 0) or hex
// (leading 0x); the last part fills the bytes left. Values that do not
// fit are refused (glibc refuses them too).
func parseInetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals [4]uint64
	for i, p := range parts {
		v, ok := atonPart(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	n := len(parts)
	for i := 0; i < n-1; i++ {
		if vals[i] > 0xff {
			return netip.Addr{}, false
		}
	}
	last := vals[n-1]
	if last >= 1<<(8*(5-n)) {
		return netip.Addr{}, false
	}
	var b [4]byte
	for i := 0; i < n-1; i++ {
		b[i] = byte(vals[i])
	}
	for i := 3; i >= n-1; i-- {
		b[i] = byte(last)
		last >>= 8
	}
	return netip.AddrFrom4(b), true
}

// atonPart reads one part: "0x1f", "017", "31". An empty part, "0x"
// without digits, 8 or 9 in an octal part, or a value above 2^32-1 is
// refused.
func atonPart(p string) (uint64, bool) {
	base := uint64(10)
	switch {
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		base, p = 16, p[2:]
	case len(p) >= 1 && p[0] == '0':
		base = 8
	}
	if p == "" {
		return 0, false
	}
	var v uint64
	for _, c := range []byte(p) {
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
		v = v*base + d
		if v > 0xffffffff {
			return 0, false
		}
	}
	return v, true
}
