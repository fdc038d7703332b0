package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func TestPolicyRefusesBadEntries(t *testing.T) {
	for entry, why := range map[string]string{
		"pypi.org":               "has no port",
		"pypi.org:":              "has no port",
		"pypi.org:0":             "1 to 65535",
		"pypi.org:https":         "1 to 65535",
		"*pypi.org:443":          "leftmost label",
		"a.*.org:443":            "leftmost label",
		"*.*.org:443":            "leftmost label",
		"*.:443":                 "not a domain",
		"10.0.0.0/33:80":         "CIDR",
		"10.0.0.5/24:80":         "write 10.0.0.0/24",
		"::1:443":                "brackets",
		"[fe80::1%eth0]:443":     "zone",
		"0x7f.1:80":              "dotted-decimal",
		"bad_host!.com:443":      "DNS name",
		"-x.com:443":             "DNS name",
		strings.Repeat("a", 301): "300",
	} {
		_, err := ParsePolicy([]string{"ok.example:443", entry})
		if err == nil {
			t.Errorf("%q: accepted", entry)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, why) || !strings.Contains(msg, ValidForms) || !strings.Contains(msg, entry) {
			t.Errorf("%q: error %q should name the entry, say %q and show the valid forms", entry, msg, why)
		}
	}
	many := make([]string, MaxEntries+1)
	for i := range many {
		many[i] = "a.example:443"
	}
	if _, err := ParsePolicy(many); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("too many entries: %v", err)
	}
}

func TestPolicyMatches(t *testing.T) {
	p, err := ParsePolicy([]string{"pypi.org:443", "*.pythonhosted.org:443", "10.0.0.5:8080",
		"203.0.113.0/24:80", "[2001:db8::1]:443", "[2001:db8:1::/48]:80", "Mixed.Case.ORG.:443"})
	if err != nil {
		t.Fatal(err)
	}
	ip := func(s string, port int) Target {
		a := netip.MustParseAddr(s)
		return Target{Host: a.String(), IP: a, Port: port}
	}
	name := func(s string, port int) Target { return Target{Host: s, Port: port} }
	for _, c := range []struct {
		t    Target
		want bool
	}{
		{name("pypi.org", 443), true},
		{name("pypi.org", 80), false},
		{name("evil-pypi.org", 443), false},
		{name("pypi.org.evil.com", 443), false},
		{name("files.pythonhosted.org", 443), true},
		{name("a.b.pythonhosted.org", 443), true},
		{name("pythonhosted.org", 443), false},
		{name("xpythonhosted.org", 443), false},
		{name("mixed.case.org", 443), true},
		{ip("10.0.0.5", 8080), true},
		{ip("::ffff:10.0.0.5", 8080), true},
		{ip("10.0.0.6", 8080), false},
		{ip("10.0.0.5", 80), false},
		{ip("203.0.113.77", 80), true},
		{ip("203.0.114.1", 80), false},
		{ip("2001:db8::1", 443), true},
		{ip("2001:db8:1:2::3", 80), true},
		{ip("2001:db8:2::3", 80), false},
		// A name never matches an IP entry, an IP never a name entry.
		{name("10.0.0.5.nip.io", 8080), false},
	} {
		if got := p.Allows(c.t); got != c.want {
			t.Errorf("Allows(%+v) = %v, want %v", c.t, got, c.want)
		}
	}
	var none *Policy
	if none.Allows(name("pypi.org", 443)) {
		t.Error("a nil policy allows")
	}
}
