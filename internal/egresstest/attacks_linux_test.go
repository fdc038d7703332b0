package egresstest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	nw "agentjail/internal/networld"
)

// attack is one case of the catalogue: a jailed program that tries to
// get somewhere through (or around) the proxy, and must not.
type attack struct {
	name   string
	policy string      // the daemon policy the run names
	reach  [][2]string // {url, body}: what answers from D without the proxy, shown first
	code   string      // after proxylib.py
	// reasons are the blocked reasons accepted; min is how many blocked
	// connections the report must have at least.
	reasons []string
	min     int
	// check, when set, replaces blockedOnly (for the cases whose
	// connections are not all blocked).
	check func(t *testing.T, f *fixture, r result)
	// notAsked are names the DNS server must never have been asked.
	notAsked []string
}

func unique(prefix string) string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b) + ".test"
}

var numericForms = []string{"2852039166", "0xa9fea9fe", "0251.0376.0251.0376", "169.254.43518", "0xa9.0xfe.0xa9.0xfe", "169.254.169.254.", "0x00a9fea9fe"}

func attacks() []attack {
	exfil := []string{unique("exfil1"), unique("exfil2"), unique("exfil3"), unique("exfil4")}
	own := unique("own-dns")
	meta := [2]string{"http://" + nw.MetadataV4 + "/", nw.MetadataBody}
	daemonSide := func(host string) [2]string {
		return [2]string{"http://" + host + ":" + nw.DPort + "/", nw.DaemonSideBody}
	}
	var numeric strings.Builder
	for _, h := range numericForms {
		fmt.Fprintf(&numeric, "absolute('http://%s/')\nconnect('%s', 80)\nurlopen('http://%s/')\n", h, h, h)
	}
	return []attack{
		{name: "metadata_ipv4", policy: "trap", reach: [][2]string{meta},
			code:    "urlopen('http://169.254.169.254/latest/meta-data/')\nconnect('169.254.169.254', 80)\nabsolute('http://169.254.169.254/')",
			reasons: []string{"private_address"}, min: 3},
		{name: "metadata_by_name", policy: "trap", reach: [][2]string{meta, {"http://" + nw.MetadataName + "/", nw.MetadataBody}},
			code:    "urlopen('http://metadata.test/')\nconnect('metadata.test', 80)",
			reasons: []string{"private_address"}, min: 2},
		{name: "metadata_ipv6", policy: "trap", reach: [][2]string{{"http://[" + nw.MetadataV6 + "]/", nw.MetadataBody}},
			code:    "urlopen('http://[fd00:ec2::254]/')\nconnect('[fd00:ec2::254]', 80)\nurlopen('http://metadata6.test/')",
			reasons: []string{"private_address"}, min: 3},
		{name: "metadata_v4_mapped_ipv6", policy: "trap", reach: [][2]string{{"http://[::ffff:" + nw.MetadataV4 + "]/", nw.MetadataBody}, {"http://" + nw.MappedName + "/", nw.MetadataBody}},
			code:    "urlopen('http://mapped.test/')\nurlopen('http://[::ffff:169.254.169.254]/')\nconnect('[::ffff:169.254.169.254]', 80)\nconnect('[::ffff:a9fe:a9fe]', 80)",
			reasons: []string{"private_address", "not_allowed"}, min: 4},
		{name: "metadata_numeric_forms", policy: "trap", reach: [][2]string{meta}, code: numeric.String(),
			reasons: []string{"private_address", "not_allowed", "bad_request"}, min: len(numericForms), notAsked: numericForms},
		{name: "dns_rebinding", policy: "trap", reach: [][2]string{meta, {"http://" + nw.EchoAddr + "/", `"server":"echo"`}},
			code: "for i in range(6):\n    urlopen('http://rebind.test/')", check: rebindCheck},
		{name: "refused_name_never_resolved", policy: "world", reach: [][2]string{{"http://" + nw.EchoName + "/", `"server":"echo"`}},
			code:    fmt.Sprintf("urlopen('http://%s/')\nconnect('%s', 443)\nabsolute('http://%s/')\nurlopen('https://%s/')", exfil[0], exfil[1], exfil[2], exfil[3]),
			reasons: []string{"not_allowed"}, min: 3, notAsked: exfil},
		{name: "no_proxy_variables", policy: "world", reach: [][2]string{{"http://" + nw.EchoAddr + "/", `"server":"echo"`}},
			code: noProxyCodeFor(own), check: noProxyCheck, notAsked: []string{own}},
		{name: "connect_host_not_allowed", policy: "world", reach: [][2]string{{"https://" + nw.OtherName + "/", `"server":"echo"`}},
			code: "connect('other.test', 443, sni='other.test')\nurlopen('https://other.test/')", reasons: []string{"not_allowed"}, min: 2,
			check: func(t *testing.T, f *fixture, r result) {
				blockedOnly(t, r, 2, "not_allowed")
				assert.Contains(t, strings.Join(r.Feedback, "\n"), nw.OtherName, "feedback names the refused host")
			}},
		{name: "connect_allowed_host_other_port", policy: "world", reach: [][2]string{{"http://" + nw.EchoName + ":8080/", `"server":"echo"`}},
			code:    "connect('echo.test', 8080)\nabsolute('http://echo.test:8080/')\nurlopen('http://echo.test:8080/')",
			reasons: []string{"not_allowed"}, min: 3},
		{name: "sni_differs_from_connect_host", policy: "world", reach: [][2]string{{"https://" + nw.OtherName + "/", `"sni":"` + nw.OtherName + `"`}},
			code: sniCode, reasons: []string{"sni_mismatch"}, min: 2, check: sniCheck},
		{name: "absolute_form_host_header_elsewhere", policy: "world", reach: [][2]string{{"http://" + nw.EchoName + "/", `"server":"echo"`}},
			code:    "absolute('http://echo.test/', host='other.test')\nabsolute('http://echo.test/', host='169.254.169.254')",
			reasons: []string{"host_mismatch", "bad_request"}, min: 2, check: hostMismatchCheck},
		{name: "origin_form_requests", policy: "world", reach: [][2]string{{"http://" + nw.EchoName + "/", `"server":"echo"`}},
			code:    "raw('GET / HTTP/1.1\\r\\nHost: echo.test\\r\\nConnection: close\\r\\n\\r\\n')\nraw('GET /x HTTP/1.1\\r\\nConnection: close\\r\\n\\r\\n')\nraw('GET / HTTP/1.0\\r\\n\\r\\n')",
			reasons: []string{"bad_request"}, check: originCheck},
		{name: "loopback_and_the_daemons_addresses", policy: "trap",
			reach: [][2]string{daemonSide("127.0.0.1"), daemonSide("[::1]"), daemonSide("0.0.0.0"), daemonSide(nw.DAddr4), daemonSide("[" + nw.DAddr6 + "]"), daemonSide(nw.SelfName),
				{"http://" + nw.DAddr4 + ":" + nw.MetricsPort + "/metrics", "# HELP"}},
			code:    loopbackCode,
			reasons: []string{"private_address", "not_allowed"}, min: 10, notAsked: nil},
		{name: "private_without_private_allow", policy: "trap", reach: [][2]string{{"http://" + nw.PrivateAddr + ":8080/", nw.PrivateBody}},
			code:    "urlopen('http://10.0.0.5:8080/')\nurlopen('http://private.test:8080/')\nconnect('10.0.0.5', 8080)\nurlopen('http://10.0.0.5/')",
			reasons: []string{"private_address"}, min: 4},
	}
}

const loopbackCode = `for u in ['http://localhost:8081/', 'http://127.0.0.1:8081/', 'http://[::1]:8081/', 'http://0.0.0.0:8081/',
          'http://self.test:8081/', 'http://203.0.113.1:8081/', 'http://[2001:db8::1]:8081/',
          'http://203.0.113.1:9464/metrics', 'http://self.test:9464/metrics']:
    urlopen(u)
connect('127.0.0.1', 8081)
connect('0.0.0.0', 8081)
`

// Without the proxy variables, nothing gets out: the jail has no route,
// no resolver, no raw sockets.
const noProxyCode = `no_proxy()
import socket, struct
def attempt(what, fn):
    try:
        fn()
        out(kind="direct", what=what, ok=True)
    except Exception as e:
        out(kind="direct", what=what, ok=False, error="%%s: %%s" %% (type(e).__name__, e))
def tcp():
    socket.create_connection(("203.0.113.20", 80), timeout=3).sendall(b"GET / HTTP/1.0\r\n\r\n")
def tcp6():
    socket.create_connection(("2001:db8::2", 80), timeout=3)
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3)
    q = struct.pack(">HHHHHH", 7, 0x100, 1, 0, 0, 0) + b"".join(bytes([len(p)]) + p.encode() for p in "%s".split(".")) + b"\0\0\1\0\1"
    s.sendto(q, ("203.0.113.53", 53))
    s.recvfrom(512)
def raw_icmp():
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP).sendto(b"\x08\0\0\0\0\0\0\0", ("203.0.113.2", 0))
def packet():
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0x0300)
def own_dns():
    socket.getaddrinfo("%s", 443)
def lib():
    import urllib.request
    urllib.request.urlopen("http://203.0.113.20/", timeout=3).read()
for what, fn in [("tcp", tcp), ("tcp6", tcp6), ("udp_dns", udp), ("raw_icmp", raw_icmp), ("af_packet", packet), ("getaddrinfo", own_dns), ("urllib", lib)]:
    attempt(what, fn)
`

func noProxyCheck(t *testing.T, f *fixture, r result) {
	outs := r.outs(t)
	assert.Len(t, outs, 7, "stdout %s stderr %s", r.Stdout, r.Stderr)
	for _, o := range outs {
		assert.Equal(t, false, o["ok"], "%v got out without the proxy", o["what"])
	}
	if r.Network != nil {
		assert.Empty(t, r.Network.Connections, "nothing went through the proxy")
	}
}

func rebindCheck(t *testing.T, f *fixture, r result) {
	if !assert.NotNil(t, r.Network) {
		return
	}
	assert.Len(t, r.Network.Connections, 6, "six requests")
	for _, c := range r.Network.Connections {
		switch c.Verdict {
		case "allowed":
			if c.Reason == "" {
				assert.Equal(t, nw.EchoAddr, c.IP, "an allowed connection went to the public address: %s", c)
			}
		case "blocked":
			assert.Equal(t, "private_address", c.Reason, "%s", c)
		}
		if c.IP == nw.MetadataV4 {
			assert.Equal(t, "blocked", c.Verdict, "%s", c)
		}
	}
}

const sniCode = `connect('echo.test', 443, sni='other.test')
import socket, ssl
s = socket.create_connection(PROXY, timeout=15)
s.sendall(b"CONNECT echo.test:443 HTTP/1.1\r\nHost: echo.test:443\r\n\r\n")
head = s.recv(4096)
try:
    ctx = ssl.create_default_context(cafile="ca.pem")
    ctx.check_hostname = False
    t = ctx.wrap_socket(s)  # no SNI at all
    t.sendall(b"GET / HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n")
    out(kind="connect", what="no sni", status=200, body=t.recv(65536).decode("latin-1"))
except Exception as e:
    out(kind="connect", what="no sni", error="%s: %s" % (type(e).__name__, e))
`

func sniCheck(t *testing.T, f *fixture, r result) {
	blockedOnly(t, r, 2, "sni_mismatch")
	assert.NotContains(t, bodies(t, r), `"server":"echo"`, "a TLS session with a foreign SNI got through")
}

func hostMismatchCheck(t *testing.T, f *fixture, r result) {
	blockedOnly(t, r, 2, "host_mismatch", "bad_request")
	assert.NotContains(t, bodies(t, r), `"server":"echo"`, "a request naming another Host got through")
}

func originCheck(t *testing.T, f *fixture, r result) {
	if r.Network != nil {
		assert.Zero(t, r.Network.Allowed, "%v", r.Network.Connections)
	}
	assert.NotContains(t, bodies(t, r), `"server":"echo"`, "an origin-form request reached the echo server")
	for _, o := range r.outs(t) {
		assert.NotEqual(t, float64(200), o["status"], "%v", o)
	}
}

// TestEgressAttacks runs the catalogue in warm, cold and session mode,
// with the leftover check (the daemon's fds) after every run.
func TestEgressAttacks(t *testing.T) {
	f := newFixture(t)
	base := f.baseline(t, f.d)
	for _, a := range attacks() {
		t.Run(a.name, func(t *testing.T) {
			for _, u := range a.reach {
				f.reachable(t, u[0], u[1])
			}
			for _, mode := range modes {
				t.Run(mode, func(t *testing.T) {
					r := f.run(t, f.d, mode, request{code: a.code, network: map[string]any{"policy": a.policy}})
					t.Logf("status %s; stderr %.300s; network %+v", r.Status, r.Stderr, r.Network)
					noSecret(t, r)
					if a.check != nil {
						a.check(t, f, r)
					} else {
						blockedOnly(t, r, a.min, a.reasons...)
					}
					for _, n := range a.notAsked {
						assert.False(t, f.w.Asked(strings.TrimSuffix(strings.ToLower(n), ".")), "the DNS server was asked about %s", n)
					}
					healthy(t, f.d)
					fdsSettle(t, f.d, base, a.name+" "+mode)
				})
			}
		})
	}
}

// bodies is every body the program's requests got back, together.
func bodies(t *testing.T, r result) string {
	var b strings.Builder
	for _, o := range r.outs(t) {
		if s, ok := o["body"].(string); ok {
			b.WriteString(s)
			b.WriteString("\n")
		}
	}
	return b.String()
}

func noProxyCodeFor(name string) string { return fmt.Sprintf(noProxyCode, name, name) }
