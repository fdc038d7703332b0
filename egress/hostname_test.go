package egress

import (
	"net/netip"
	"testing"
)

func TestInetAtonLikeTheKernel(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1":           "127.0.0.1",
		"127.1":               "127.0.0.1",
		"127.0.1":             "127.0.0.1",
		"2130706433":          "127.0.0.1",
		"0x7f000001":          "127.0.0.1",
		"0x7f.1":              "127.0.0.1",
		"0177.0.0.1":          "127.0.0.1",
		"0177.0.0.01":         "127.0.0.1",
		"0xA9.0xFE.0xA9.0xFE": "169.254.169.254",
		"2852039166":          "169.254.169.254",
		"0251.0376.0251.0376": "169.254.169.254",
		"169.254.43518":       "169.254.169.254",
		"0":                   "0.0.0.0",
		"0x0":                 "0.0.0.0",
		"10.0.0.5":            "10.0.0.5",
		"4294967295":          "255.255.255.255",
	} {
		got, ok := parseInetAton(in)
		if !ok || got.String() != want {
			t.Errorf("parseInetAton(%q) = %v %v, want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "1..2", "1.2.3.4.5", "256.1.1.1", "1.2.3.256", "1.2.65536", "4294967296",
		"0x", "08", "0x1g", "1.2.3.", ".1.2.3", "99999999999999999999", "1.16777216"} {
		if got, ok := parseInetAton(in); ok {
			t.Errorf("parseInetAton(%q) = %v, want refused", in, got)
		}
	}
}

func TestParseTarget(t *testing.T) {
	for in, want := range map[string]Target{
		"PyPI.org.:443":         {Host: "pypi.org", Port: 443},
		"0x7f.1:80":             {Host: "127.0.0.1", IP: netip.MustParseAddr("127.0.0.1"), Port: 80},
		"[::ffff:a9fe:a9fe]:80": {Host: "::ffff:169.254.169.254", IP: netip.MustParseAddr("::ffff:169.254.169.254"), Port: 80},
		"[::1]:443":             {Host: "::1", IP: netip.MustParseAddr("::1"), Port: 443},
		"1password.com:443":     {Host: "1password.com", Port: 443},
	} {
		got, err := parseTarget(in, 0)
		if err != nil || got != want {
			t.Errorf("parseTarget(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	if got, err := parseTarget("example.com", 80); err != nil || got.Port != 80 {
		t.Errorf("default port: %+v %v", got, err)
	}
	for _, in := range []string{"example.com", "example.com:", "example.com:0", "example.com:65536",
		"example.com:+80", "::1:80", "[::1]", "[fe80::1%eth0]:80", "1.2.3.4.5:80", "08.1:80",
		"exa mple.com:80", "-bad.com:80", ":80", "[1.2.3.4]:80", "a..b:80"} {
		if got, err := parseTarget(in, 0); err == nil {
			t.Errorf("parseTarget(%q) = %+v, want an error", in, got)
		}
	}
}
