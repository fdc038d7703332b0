package egress

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

// world is a proxy on loopback with a DNS server, an HTTP and an HTTPS
// upstream; private_allow lists 127.0.0.1 only.
type world struct {
	dns   *fakeDNS
	proxy *Proxy
	run   *Run
	addr  string // the proxy's listener
	http  *httptest.Server
	https *httptest.Server
	hosts chan string // the Host of every request the upstreams saw
}

func port(s *httptest.Server) string {
	return s.Listener.Addr().(*net.TCPAddr).AddrPort().String()[len("127.0.0.1:"):]
}

func newWorld(t *testing.T, tune func(*Options), allow ...string) *world {
	t.Helper()
	w := &world{hosts: make(chan string, 100)}
	h := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.hosts <- r.Host
		if n := r.URL.Query().Get("bytes"); n != "" {
			var k int
			fmt.Sscan(n, &k)
			rw.Write([]byte(strings.Repeat("x", k)))
			return
		}
		fmt.Fprintf(rw, "hello %s %s proxy-connection=%q", r.Method, r.URL.Path, r.Header.Get("Proxy-Connection"))
	})
	w.http = httptest.NewServer(h)
	w.https = httptest.NewTLSServer(h)
	t.Cleanup(w.http.Close)
	t.Cleanup(w.https.Close)
	lo := netip.MustParseAddr("127.0.0.1")
	w.dns = startDNS(t, map[string][]netip.Addr{
		"up.test": {lo}, "tls.test": {lo}, "refused.test": {lo},
		"private.test":  {netip.MustParseAddr("127.0.0.2")},
		"twoaddrs.test": {netip.MustParseAddr("127.0.0.2"), lo},
		"nxdomain.test": nil,
	})
	allowList, _ := ParsePrivateAllow([]string{"127.0.0.1"})
	opts := Options{Guard: NewGuard(allowList), Resolver: w.dns.addr(), IdleTimeout: 5 * time.Second}
	if tune != nil {
		tune(&opts)
	}
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hp, sp := port(w.http), port(w.https)
	list := []string{"up.test:" + hp, "tls.test:" + sp, "private.test:" + hp, "twoaddrs.test:" + hp,
		"nxdomain.test:" + hp, "127.0.0.0/8:" + hp, "127.0.0.1:" + sp}
	for _, a := range allow {
		list = append(list, strings.NewReplacer("HTTP", hp, "HTTPS", sp).Replace(a))
	}
	pol, err := ParsePolicy(list)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.proxy, w.addr = p, l.Addr().String()
	w.run = p.Start(l, pol)
	t.Cleanup(func() { w.run.Close() })
	return w
}

func (w *world) client() *http.Client {
	u, _ := url.Parse("http://" + w.addr)
	return &http.Client{Transport: &http.Transport{
		Proxy:           http.ProxyURL(u),
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}, Timeout: 10 * time.Second}
}

func (w *world) get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := w.client().Get(strings.NewReplacer("HTTPS", port(w.https), "HTTP", port(w.http)).Replace(u))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// raw sends text ({H} and {S} stand for the upstreams' ports) to the proxy and returns the status line of its answer.
func (w *world) raw(t *testing.T, text string) string {
	t.Helper()
	c, err := net.Dial("tcp", w.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, strings.NewReplacer("{S}", port(w.https), "{H}", port(w.http)).Replace(text))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line)
}

// only returns the report's one connection.
func only(t *testing.T, rep *Report) Connection {
	t.Helper()
	if len(rep.Connections) != 1 {
		t.Fatalf("want one connection, report: %+v", rep)
	}
	return rep.Connections[0]
}

func TestProxyForwardsHTTP(t *testing.T) {
	w := newWorld(t, nil)
	code, body := w.get(t, "http://up.test:HTTP/hello")
	if code != 200 || body != `hello GET /hello proxy-connection=""` {
		t.Fatalf("%d %q", code, body)
	}
	if h := <-w.hosts; h != "up.test:"+port(w.http) {
		t.Errorf("upstream saw Host %q", h)
	}
	rep := w.run.Close()
	c := only(t, rep)
	if c.Verdict != Allowed || c.Reason != "" || c.Host != "up.test" || c.IP != "127.0.0.1" || c.Sent == 0 || c.Received == 0 {
		t.Errorf("%+v", c)
	}
	if rep.Allowed != 1 || rep.Blocked != 0 || rep.BytesSent != c.Sent || rep.BytesReceived != c.Received {
		t.Errorf("%+v", rep)
	}
}

func TestProxyConnectTLS(t *testing.T) {
	w := newWorld(t, nil)
	if code, body := w.get(t, "https://tls.test:HTTPS/x"); code != 200 || !strings.HasPrefix(body, "hello GET /x") {
		t.Fatalf("%d %q", code, body)
	}
	// By IP: Go sends no server name, which an IP CONNECT accepts.
	if code, body := w.get(t, "https://127.0.0.1:HTTPS/y"); code != 200 {
		t.Fatalf("%d %q", code, body)
	}
	rep := w.run.Close()
	if rep.Allowed != 2 || rep.Blocked != 0 {
		t.Errorf("%+v", rep)
	}
}

// A name the policy refuses is never looked up.
func TestProxyRefusesBeforeResolving(t *testing.T) {
	w := newWorld(t, nil)
	code, body := w.get(t, "http://refused.test:HTTP/")
	if code != 403 || !strings.Contains(body, "not in this run's network policy") || !strings.Contains(body, "up.test:") {
		t.Fatalf("%d %q", code, body)
	}
	if code, _ := w.get(t, "http://up.test:1/"); code != 403 {
		t.Fatalf("another port: %d", code)
	}
	if w.dns.asked("refused.test") {
		t.Error("the refused name was sent to the DNS server")
	}
	rep := w.run.Close()
	for _, c := range rep.Connections {
		if c.Verdict != Blocked || c.Reason != ReasonNotAllowed || c.IP != "" {
			t.Errorf("%+v", c)
		}
	}
	if rep.Blocked != 2 {
		t.Errorf("%+v", rep)
	}
}

func TestProxyRefusesPrivateAddresses(t *testing.T) {
	w := newWorld(t, nil)
	for _, u := range []string{"http://private.test:HTTP/", "http://2130706434:HTTP/", "http://0x7f.2:HTTP/",
		"http://0177.0.0.2:HTTP/"} {
		if code, body := w.get(t, u); code != 403 || !strings.Contains(body, "private_address") {
			t.Errorf("%s: %d %q", u, code, body)
		}
	}
	// The kernel's reading of 0x7f.1 is 127.0.0.1, which private_allow lists.
	if code, body := w.get(t, "http://0x7f.1:HTTP/"); code != 200 {
		t.Errorf("0x7f.1: %d %q", code, body)
	}
	// The first address is refused, the second connects.
	if code, body := w.get(t, "http://twoaddrs.test:HTTP/"); code != 200 {
		t.Errorf("twoaddrs: %d %q", code, body)
	}
	rep := w.run.Close()
	if rep.Blocked != 4 || rep.Allowed != 2 {
		t.Fatalf("%+v", rep)
	}
	for _, c := range rep.Connections[:4] {
		if c.Reason != ReasonPrivateAddress || c.IP != "127.0.0.2" {
			t.Errorf("%+v", c)
		}
	}
}

// The Control hook refuses the address connect(2) gets, whatever was
// checked before.
func TestProxyControlChecksConnectAddress(t *testing.T) {
	w := newWorld(t, nil)
	if err := w.proxy.control("tcp4", "127.0.0.2:80", nil); err == nil {
		t.Error("127.0.0.2 passed the hook")
	}
	if err := w.proxy.control("tcp6", "[::ffff:169.254.169.254]:80", nil); err == nil {
		t.Error("mapped metadata passed the hook")
	}
	if err := w.proxy.control("udp4", "127.0.0.1:53", nil); err == nil {
		t.Error("UDP passed the hook")
	}
	if err := w.proxy.control("tcp4", "127.0.0.1:80", nil); err != nil {
		t.Errorf("127.0.0.1 is listed: %v", err)
	}
}

func TestProxyResolveAndConnectFailures(t *testing.T) {
	w := newWorld(t, nil, "up.test:1")
	if code, body := w.get(t, "http://nxdomain.test:HTTP/"); code != 502 || !strings.Contains(body, ReasonResolveFailed) {
		t.Errorf("%d %q", code, body)
	}
	if code, body := w.get(t, "http://up.test:1/"); code != 502 || !strings.Contains(body, ReasonConnectFailed) {
		t.Errorf("%d %q", code, body)
	}
	rep := w.run.Close()
	if rep.Allowed != 2 || rep.Connections[0].Reason != ReasonResolveFailed || rep.Connections[1].Reason != ReasonConnectFailed {
		t.Errorf("%+v", rep)
	}
}

// A name that rebinds to a refused address is refused on the next
// connection: every connection resolves, and its address is checked.
// The refused name's answer is never asked for, either way.
func TestProxyRebinding(t *testing.T) {
	w := newWorld(t, nil, "rebind.test:HTTP")
	w.dns.set("rebind.test", netip.MustParseAddr("127.0.0.1"))
	if code, _ := w.get(t, "http://rebind.test:HTTP/"); code != 200 {
		t.Fatalf("first: %d", code)
	}
	w.dns.set("rebind.test", netip.MustParseAddr("127.0.0.2"))
	if code, body := w.get(t, "http://rebind.test:HTTP/"); code != 403 || !strings.Contains(body, ReasonPrivateAddress) {
		t.Fatalf("after the rebinding: %d %q", code, body)
	}
	rep := w.run.Close()
	if rep.Allowed != 1 || rep.Blocked != 1 || rep.Connections[1].IP != "127.0.0.2" {
		t.Errorf("%+v", rep)
	}
}
