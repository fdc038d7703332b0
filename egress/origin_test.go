package egress

import (
	"strings"
	"testing"
)

// An origin-form request is refused and reported with the host its Host
// header names, or as "(origin-form)", not as host "" port 0.
func TestProxyReportsOriginFormHost(t *testing.T) {
	w := newWorld(t, nil)
	for _, text := range []string{"GET / HTTP/1.1\r\nHost: up.test:{H}\r\n\r\n", "GET / HTTP/1.0\r\n\r\n"} {
		if got := w.raw(t, text); !strings.Contains(got, " 400 ") {
			t.Errorf("%q: %q", text, got)
		}
	}
	rep := w.run.Close()
	if len(rep.Connections) != 2 {
		t.Fatalf("%+v", rep)
	}
	if c := rep.Connections[0]; c.Host != "up.test" || c.Port == 0 || c.Reason != ReasonBadRequest {
		t.Errorf("%+v", c)
	}
	if c := rep.Connections[1]; c.Host != OriginForm || c.Reason != ReasonBadRequest {
		t.Errorf("%+v", c)
	}
}
