package egress

import (
	"strconv"
	"strings"
	"testing"
)

// An entry with a port and no host is refused with an error, not a panic.
func TestPolicyEntryWithoutHost(t *testing.T) {
	for _, e := range []string{":443", ":80", "[]:443"} {
		_, err := ParsePolicy([]string{e})
		if err == nil || !strings.Contains(err.Error(), e) {
			t.Errorf("%q: %v", e, err)
		}
	}
	if _, err := ParsePolicy([]string{":443"}); err == nil || !strings.Contains(err.Error(), "has no host") {
		t.Errorf("%v", err)
	}
}

// FuzzPolicyEntry feeds the entry parser anything: it must never panic,
// and an error names the entry.
func FuzzPolicyEntry(f *testing.F) {
	for _, s := range []string{"pypi.org:443", "*.pythonhosted.org:443", ":443", "10.0.0.5:8080",
		"203.0.113.0/24:80", "[2001:db8::1]:443", "0x7f.1:80", "*.:443", "[]:1", ":", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, e string) {
		if _, err := ParsePolicy([]string{e}); err != nil && !strings.Contains(err.Error(), strconv.Quote(e)) {
			t.Fatalf("the error %q does not name the entry", err)
		}
	})
}
