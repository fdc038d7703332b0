// Package networld builds a small network of its own for the egress tests
// and benchmarks (issue 33): two network namespaces, D where the daemon
// runs and U ("upstream"), joined by a veth pair, with a DNS server, a
// package index over HTTP and HTTPS, an echo server, "metadata" servers
// and a "private" server in U. Nothing in it reaches the host's network:
// every address is in a documentation range or a private one, and lives
// in U.
//
// Servers run in U: their listening sockets are made on an OS thread
// that entered U (a socket keeps its namespace), and are served from any
// goroutine. The daemon is started in D with nsenter (not `ip netns
// exec`, which remounts /sys and loses the cgroup mounts); clients talk
// to it over its Unix socket, which no network namespace holds.
package networld

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"sync"
)

// The world's addresses. The documentation ranges (203.0.113/24,
// 198.51.100/24, 192.0.2/24, 2001:db8::/32) are its "public" addresses:
// the proxy does not refuse them.
const (
	DAddr4       = "203.0.113.1"     // the daemon's namespace, D
	DAddr6       = "2001:db8::1"     // D's IPv6 address
	UAddr4       = "203.0.113.2"     // U's end of the link, D's default route
	UAddr6       = "2001:db8::2"     // U's IPv6 end, D's IPv6 default route
	IndexAddr    = "203.0.113.10"    // index.test: the package index, ports 80 and 443
	EchoAddr     = "203.0.113.20"    // echo.test: ports 80, 443 (TLS) and 8080
	DNSAddr      = "203.0.113.53"    // the DNS server, port 53 (UDP and TCP)
	MetadataV4   = "169.254.169.254" // a "cloud metadata" server, port 80
	MetadataV6   = "fd00:ec2::254"   // its IPv6 twin, port 80
	PrivateAddr  = "10.0.0.5"        // a "private" server, ports 80 and 8080
	MetadataBody = "metadata-secret-7f3a"
	PrivateBody  = "private-secret-91c2"
)

// The names the DNS server answers; every other name is NXDOMAIN.
const (
	IndexName    = "index.test"     // A IndexAddr
	EchoName     = "echo.test"      // A EchoAddr
	OtherName    = "other.test"     // A EchoAddr: a second name for the echo server
	MetadataName = "metadata.test"  // A MetadataV4, AAAA MetadataV6
	Metadata6    = "metadata6.test" // AAAA MetadataV6 only
	MappedName   = "mapped.test"    // AAAA ::ffff:169.254.169.254 only
	RebindName   = "rebind.test"    // A EchoAddr, then MetadataV4, alternating, TTL 0
	SelfName     = "self.test"      // A DAddr4, AAAA DAddr6: the daemon's own addresses
	PrivateName  = "private.test"   // A PrivateAddr
)

// The package the index serves: a pure-Python wheel built at start.
const (
	WheelProject = "ajdemo"
	WheelVersion = "1.0"
	WheelValue   = "42" // ajdemo.VALUE
)

// World is one running world. Start makes it; Close removes everything.
type World struct {
	D, U   string // the namespaces' names (under /run/netns)
	Dir    string // a directory of its own: the CA, the wheel
	CAFile string // the test CA's certificate (PEM): what clients trust
	CA     *x509.CertPool
	Wheel  []byte // the wheel's bytes
	// WheelFile is the wheel's file name (PROJECT-VERSION-py3-none-any.whl).
	WheelFile string

	dns     *dnsServer
	closers []func()
	vethD   string
	vethU   string
	mu      sync.Mutex
	closed  bool
	httpSrv []*http.Server
	cert    tls.Certificate
}

// Query is one question the DNS server was asked.
type Query struct {
	Name string // without the trailing dot, lower case
	Type string // "A", "AAAA", ...
}

// Queries is every question the DNS server has been asked so far.
func (w *World) Queries() []Query { return w.dns.queries() }

// Asked says whether the DNS server was ever asked about name (any type).
func (w *World) Asked(name string) bool {
	for _, q := range w.Queries() {
		if q.Name == name {
			return true
		}
	}
	return false
}
