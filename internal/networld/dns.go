package networld

import (
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// dnsServer answers the world's names and logs every question, over UDP
// and TCP.
type dnsServer struct {
	mu     sync.Mutex
	log    []Query
	rebind int
}

func (s *dnsServer) queries() []Query {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Query(nil), s.log...)
}

// record is one answer: an address and its TTL.
type record struct {
	addr netip.Addr
	ttl  uint32
}

// lookup answers name for type t (A or AAAA); ok is false for a name the
// world does not have (NXDOMAIN).
func (s *dnsServer) lookup(name string, t dnsmessage.Type) (recs []record, ok bool) {
	a := func(ip string) []record { return []record{{netip.MustParseAddr(ip), 60}} }
	var v4, v6 []record
	switch name {
	case IndexName:
		v4 = a(IndexAddr)
	case EchoName, OtherName:
		v4 = a(EchoAddr)
	case MetadataName:
		v4, v6 = a(MetadataV4), a(MetadataV6)
	case Metadata6:
		v6 = a(MetadataV6)
	case MappedName:
		v6 = a("::ffff:" + MetadataV4)
	case SelfName:
		v4, v6 = a(DAddr4), a(DAddr6)
	case PrivateName:
		v4 = a(PrivateAddr)
	case "localhost":
		v4, v6 = a("127.0.0.1"), a("::1") // as systemd-resolved answers
	case RebindName:
		if t == dnsmessage.TypeA {
			s.mu.Lock()
			s.rebind++
			n := s.rebind
			s.mu.Unlock()
			ip := EchoAddr
			if n%2 == 0 {
				ip = MetadataV4
			}
			v4 = []record{{netip.MustParseAddr(ip), 0}}
		}
	default:
		return nil, false
	}
	switch t {
	case dnsmessage.TypeA:
		return v4, true
	case dnsmessage.TypeAAAA:
		return v6, true
	}
	return nil, true
}

// answer builds the reply to one query message (nil when it is not one).
func (s *dnsServer) answer(req []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(req)
	if err != nil || h.Response {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	name := strings.ToLower(strings.TrimSuffix(q.Name.String(), "."))
	s.mu.Lock()
	s.log = append(s.log, Query{Name: name, Type: strings.TrimPrefix(q.Type.String(), "Type")})
	s.mu.Unlock()
	recs, ok := s.lookup(name, q.Type)
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	if !ok {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	_ = b.StartQuestions()
	_ = b.Question(q)
	_ = b.StartAnswers()
	for _, r := range recs {
		rrh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: r.ttl}
		if r.addr.Is4() {
			_ = b.AResource(rrh, dnsmessage.AResource{A: r.addr.As4()})
		} else {
			_ = b.AAAAResource(rrh, dnsmessage.AAAAResource{AAAA: r.addr.As16()})
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}

func (s *dnsServer) serveUDP(pc net.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if out := s.answer(buf[:n]); out != nil {
			_, _ = pc.WriteTo(out, from)
		}
	}
}

func (s *dnsServer) serveTCP(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			for {
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				var n uint16
				if binary.Read(c, binary.BigEndian, &n) != nil {
					return
				}
				req := make([]byte, n)
				if _, err := io.ReadFull(c, req); err != nil {
					return
				}
				out := s.answer(req)
				if out == nil {
					return
				}
				_, _ = c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(out))), out...))
			}
		}()
	}
}
