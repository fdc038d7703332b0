package egress

import (
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

// BenchmarkRelayThroughput moves 64 MiB from a loopback server to a
// client directly and through a CONNECT tunnel of the proxy, and reports
// each one's MB/s: go test -run '^$' -bench RelayThroughput ./egress.
func BenchmarkRelayThroughput(b *testing.B) {
	const size = 64 << 20
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	go func() {
		buf := make([]byte, 256<<10)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				go io.Copy(io.Discard, c) // a close with unread bytes would be a reset
				for sent := 0; sent < size; sent += len(buf) {
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	up := l.Addr().String()
	allow, _ := ParsePrivateAllow([]string{"127.0.0.1"})
	p, err := New(Options{Guard: NewGuard(allow), Resolver: "127.0.0.1:1", MaxBytes: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	pol, _ := ParsePolicy([]string{up})
	pl, _ := net.Listen("tcp", "127.0.0.1:0")
	run := p.Start(pl, pol)
	defer run.Close()
	fetch := func(proxied bool) time.Duration {
		start := time.Now()
		var c net.Conn
		if proxied {
			c, err = net.Dial("tcp", pl.Addr().String())
			if err == nil {
				fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n\r\n", up)
				hdr := make([]byte, len("HTTP/1.1 200 Connection established\r\n\r\n"))
				_, err = io.ReadFull(c, hdr)
				c.Write([]byte{'x'}) // the first byte: not TLS, port not 443
			}
		} else {
			c, err = net.Dial("tcp", up)
		}
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, c)
		c.Close()
		if n != size {
			b.Fatalf("got %d bytes", n)
		}
		return time.Since(start)
	}
	var direct, proxied time.Duration
	for b.Loop() {
		direct += fetch(false)
		proxied += fetch(true)
	}
	mbps := func(d time.Duration) float64 { return float64(size) * float64(b.N) / d.Seconds() / 1e6 }
	b.ReportMetric(mbps(direct), "direct-MB/s")
	b.ReportMetric(mbps(proxied), "proxied-MB/s")
	b.ReportMetric(mbps(proxied)/mbps(direct), "ratio")
}
