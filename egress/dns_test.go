package egress

import (
	"encoding/binary"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// fakeDNS is a UDP DNS server on loopback for the tests: it answers A
// and AAAA questions from a map and logs every name it was asked.
type fakeDNS struct {
	pc net.PacketConn

	mu      sync.Mutex
	answers map[string][]netip.Addr // lower-case name without the dot
	log     []string
}

func startDNS(t *testing.T, answers map[string][]netip.Addr) *fakeDNS {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &fakeDNS{pc: pc, answers: answers}
	go d.serve()
	t.Cleanup(func() { pc.Close() })
	return d
}

func (d *fakeDNS) addr() string { return d.pc.LocalAddr().String() }

func (d *fakeDNS) set(name string, addrs ...netip.Addr) {
	d.mu.Lock()
	d.answers[name] = addrs
	d.mu.Unlock()
}

func (d *fakeDNS) asked(name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, n := range d.log {
		if strings.Contains(n, name) {
			return true
		}
	}
	return false
}

func (d *fakeDNS) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := d.pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if resp := d.answer(buf[:n]); resp != nil {
			_, _ = d.pc.WriteTo(resp, from)
		}
	}
}

// answer builds the reply to one query (one question, no EDNS parsing:
// additional records are dropped from the reply).
func (d *fakeDNS) answer(q []byte) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:]) != 1 {
		return nil
	}
	i := 12
	var labels []string
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if i+1+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	if i+5 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i+1:])
	question := q[12 : i+5]
	name := strings.ToLower(strings.Join(labels, "."))
	d.mu.Lock()
	d.log = append(d.log, name)
	addrs, known := d.answers[name]
	d.mu.Unlock()
	var rrs [][]byte
	for _, a := range addrs {
		if (qtype == 1 && a.Is4()) || (qtype == 28 && a.Is6()) {
			rr := []byte{0xc0, 12, 0, byte(qtype), 0, 1, 0, 0, 0, 0, 0, byte(len(a.AsSlice()))}
			rrs = append(rrs, append(rr, a.AsSlice()...))
		}
	}
	h := make([]byte, 12)
	copy(h, q[:2])
	flags := uint16(0x8180) // response, recursion desired and available
	if !known {
		flags |= 3 // NXDOMAIN
	}
	binary.BigEndian.PutUint16(h[2:], flags)
	binary.BigEndian.PutUint16(h[4:], 1)
	binary.BigEndian.PutUint16(h[6:], uint16(len(rrs)))
	out := append(h, question...)
	for _, rr := range rrs {
		out = append(out, rr...)
	}
	return out
}
