package egress

import (
	"fmt"
	"net/netip"
	"strings"
)

// MaxEntries is the most entries one allow list may have.
const MaxEntries = 256

// ValidForms shows what an allow entry looks like; errors quote it.
const ValidForms = `"pypi.org:443", "*.pythonhosted.org:443", "10.0.0.5:8080", ` +
	`"203.0.113.0/24:80", "[2001:db8::1]:443"`

// Policy is a parsed allow list. The zero Policy allows nothing.
type Policy struct {
	entries []string
	rules   []rule
}

// rule is one entry: a name, a wildcard suffix or an address prefix, and
// a port.
type rule struct {
	name   string       // "pypi.org"
	suffix string       // ".pythonhosted.org" for "*.pythonhosted.org"
	prefix netip.Prefix // "10.0.0.5/32", "203.0.113.0/24"
	port   int
}

// EntryError says which allow entry is wrong and why.
type EntryError struct {
	Entry string
	Why   string
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("allow entry %q %s; valid entries look like %s", e.Entry, e.Why, ValidForms)
}

// ParsePolicy checks every entry and returns the policy they make.
func ParsePolicy(entries []string) (*Policy, error) {
	if len(entries) > MaxEntries {
		return nil, &EntryError{Entry: entries[MaxEntries], Why: fmt.Sprintf("is past the limit of %d entries", MaxEntries)}
	}
	p := &Policy{entries: append([]string(nil), entries...)}
	for _, e := range entries {
		r, why := parseRule(e)
		if why != "" {
			return nil, &EntryError{Entry: e, Why: why}
		}
		p.rules = append(p.rules, r)
	}
	return p, nil
}

func parseRule(e string) (rule, string) {
	if len(e) > 300 {
		return rule{}, "is longer than 300 characters"
	}
	host, portText, err := splitHostPort(e)
	if err != nil {
		if err == errNoPort || err == errBadHost && !strings.Contains(e, ":") {
			return rule{}, "has no port (write host:port)"
		}
		return rule{}, "is not host:port (IPv6 addresses go in brackets)"
	}
	if portText == "" {
		return rule{}, "has no port (write host:port)"
	}
	port, err := parsePort(portText)
	if err != nil {
		return rule{}, err.Error()
	}
	switch {
	case strings.Contains(host, "/"):
		pfx, err := netip.ParsePrefix(host)
		if err != nil || pfx.Addr().Zone() != "" {
			return rule{}, "has a CIDR that does not parse"
		}
		if pfx.Masked() != pfx {
			return rule{}, fmt.Sprintf("has address bits past the prefix length (write %s)", pfx.Masked())
		}
		return rule{prefix: unmapPrefix(pfx), port: port}, ""
	case strings.Contains(host, "*"):
		rest, ok := strings.CutPrefix(host, "*.")
		if !ok || strings.Contains(rest, "*") {
			return rule{}, "has a * that is not the whole leftmost label (write *.example.com:443)"
		}
		if !validName(strings.ToLower(rest)) || looksNumeric(rest) {
			return rule{}, "has a wildcard over something that is not a domain name"
		}
		return rule{suffix: "." + strings.ToLower(rest), port: port}, ""
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return rule{}, "has an IPv6 zone, which is not allowed"
		}
		ip = ip.Unmap()
		return rule{prefix: netip.PrefixFrom(ip, ip.BitLen()), port: port}, ""
	}
	if looksNumeric(host) {
		return rule{}, "looks like an IP address but is not one in dotted-decimal form"
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if !validName(name) {
		return rule{}, "has a host that is not a valid DNS name"
	}
	return rule{name: name, port: port}, ""
}

// unmapPrefix turns ::ffff:a.b.c.d/N (N >= 96) into a.b.c.d/(N-96).
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p
}

// Entries returns the allow list as written.
func (p *Policy) Entries() []string {
	if p == nil {
		return nil
	}
	return append([]string(nil), p.entries...)
}

// Allows says whether the policy lets a client ask for t. Names match
// name entries (a wildcard matches any name below its domain, not the
// domain itself); IP literals match IP and CIDR entries. The port must
// be the entry's.
func (p *Policy) Allows(t Target) bool {
	if p == nil {
		return false
	}
	ip := t.IP.Unmap()
	for _, r := range p.rules {
		if r.port != t.Port {
			continue
		}
		switch {
		case t.IsIP():
			if r.prefix.IsValid() && r.prefix.Contains(ip) {
				return true
			}
		case r.name != "":
			if r.name == t.Host {
				return true
			}
		case r.suffix != "":
			if strings.HasSuffix(t.Host, r.suffix) {
				return true
			}
		}
	}
	return false
}
