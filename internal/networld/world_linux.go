package networld

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

var worlds atomic.Int64

// Start makes a world: the two namespaces, the link, the addresses and
// routes, and every server. dir is a directory of its own (the CA and
// the wheel go there). On an error, what was made is removed.
func Start(dir string) (w *World, err error) {
	n := worlds.Add(1)
	id := fmt.Sprintf("%d-%d", os.Getpid(), n)
	w = &World{D: "ajworld-d-" + id, U: "ajworld-u-" + id, Dir: dir, dns: &dnsServer{}}
	w.vethD, w.vethU = fmt.Sprintf("ajd%d", n), fmt.Sprintf("aju%d", n)
	defer func() {
		if err != nil {
			_ = w.Close()
			w = nil
		}
	}()
	if err := w.link(); err != nil {
		return w, err
	}
	if err := w.files(); err != nil {
		return w, err
	}
	return w, w.serve()
}

// link makes the namespaces, the veth pair, the addresses and the routes.
func (w *World) link() error {
	steps := [][]string{
		{"netns", "add", w.D},
		{"netns", "add", w.U},
		{"link", "add", w.vethD, "netns", w.D, "type", "veth", "peer", "name", w.vethU, "netns", w.U},
		{"-n", w.D, "link", "set", "lo", "up"},
		{"-n", w.D, "link", "set", w.vethD, "up"},
		{"-n", w.D, "addr", "add", DAddr4 + "/24", "dev", w.vethD},
		{"-n", w.D, "addr", "add", DAddr6 + "/64", "dev", w.vethD, "nodad"},
		{"-n", w.D, "route", "add", "default", "via", UAddr4},
		{"-n", w.D, "-6", "route", "add", "default", "via", UAddr6},
		{"-n", w.U, "link", "set", "lo", "up"},
		{"-n", w.U, "link", "set", w.vethU, "up"},
		{"-n", w.U, "addr", "add", UAddr4 + "/24", "dev", w.vethU},
		{"-n", w.U, "addr", "add", UAddr6 + "/64", "dev", w.vethU, "nodad"},
	}
	for _, a := range []string{IndexAddr + "/32", EchoAddr + "/32", DNSAddr + "/32", MetadataV4 + "/32", PrivateAddr + "/32"} {
		steps = append(steps, []string{"-n", w.U, "addr", "add", a, "dev", "lo"})
	}
	// nodad: an address in duplicate address detection cannot be bound.
	steps = append(steps, []string{"-n", w.U, "addr", "add", MetadataV6 + "/128", "dev", "lo", "nodad"})
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return err
		}
	}
	return nil
}

// files makes the CA and the wheel.
func (w *World) files() error {
	caPEM, cert, pool, err := testCA()
	if err != nil {
		return err
	}
	w.CA, w.cert = pool, cert
	w.CAFile = filepath.Join(w.Dir, "ca.pem")
	if err := os.WriteFile(w.CAFile, caPEM, 0o644); err != nil {
		return err
	}
	w.WheelFile, w.Wheel, err = buildWheel()
	return err
}

// serve opens every server's sockets in U (and D's own listeners in D).
func (w *World) serve() error {
	tlsConf := &tls.Config{Certificates: []tls.Certificate{w.cert}}
	index := indexHandler(w.WheelFile, w.Wheel)
	echo := echoHandler()
	servers := []struct {
		ns, addr string
		h        http.Handler
		tls      bool
	}{
		{w.U, IndexAddr + ":80", index, false},
		{w.U, IndexAddr + ":443", index, true},
		{w.U, EchoAddr + ":80", echo, false},
		{w.U, EchoAddr + ":443", echo, true},
		{w.U, EchoAddr + ":8080", echo, false},
		{w.U, MetadataV4 + ":80", secretHandler(MetadataBody), false},
		{w.U, "[" + MetadataV6 + "]:80", secretHandler(MetadataBody), false},
		{w.U, PrivateAddr + ":80", secretHandler(PrivateBody), false},
		{w.U, PrivateAddr + ":8080", secretHandler(PrivateBody), false},
		// The daemon's side: what a proxy that connected to its own
		// addresses or loopback would reach.
		{w.D, DAddr4 + ":" + DPort, secretHandler(DaemonSideBody), false},
		{w.D, "[" + DAddr6 + "]:" + DPort, secretHandler(DaemonSideBody), false},
		{w.D, "127.0.0.1:" + DPort, secretHandler(DaemonSideBody), false},
		{w.D, "[::1]:" + DPort, secretHandler(DaemonSideBody), false},
	}
	for _, s := range servers {
		l, err := ListenIn(s.ns, s.addr)
		if err != nil {
			return fmt.Errorf("listen on %s in %s: %w", s.addr, s.ns, err)
		}
		if s.tls {
			l = tls.NewListener(l, tlsConf)
		}
		srv := &http.Server{Handler: s.h, ReadHeaderTimeout: 10 * time.Second}
		w.httpSrv = append(w.httpSrv, srv)
		go func() { _ = srv.Serve(l) }()
	}
	var udp net.PacketConn
	var tcp net.Listener
	if err := InNS(w.U, func() (err error) {
		if udp, err = net.ListenPacket("udp", DNSAddr+":53"); err != nil {
			return err
		}
		tcp, err = net.Listen("tcp", DNSAddr+":53")
		return err
	}); err != nil {
		if udp != nil {
			udp.Close()
		}
		return fmt.Errorf("the DNS server: %w", err)
	}
	w.closers = append(w.closers, func() { udp.Close() }, func() { tcp.Close() })
	go w.dns.serveUDP(udp)
	go w.dns.serveTCP(tcp)
	return nil
}

// DPort is the port of the servers in D itself (its addresses and its
// loopback): what reaching the daemon's side through the proxy would get.
const (
	DPort          = "8081"
	DaemonSideBody = "daemon-side-secret-5be0"
)

// Close stops every server and removes the namespaces and the link. It
// may be called more than once.
func (w *World) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	for _, s := range w.httpSrv {
		_ = s.Close()
	}
	for _, c := range w.closers {
		c()
	}
	var errs []error
	for _, ns := range []string{w.D, w.U} {
		if nsInode(ns) != 0 {
			if err := ip("netns", "del", ns); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Leftovers lists what of the world is still there after Close: its
// namespaces' names, a process in one of them, the host-side link.
func (w *World) Leftovers(inodes []uint64) []string {
	var left []string
	for _, ns := range []string{w.D, w.U} {
		if nsInode(ns) != 0 {
			left = append(left, "namespace "+ns)
		}
	}
	for _, ino := range inodes {
		if p := processesIn(ino); len(p) > 0 {
			left = append(left, fmt.Sprintf("processes in namespace inode %d: %v", ino, p))
		}
	}
	for _, l := range []string{w.vethD, w.vethU} {
		if _, err := net.InterfaceByName(l); err == nil {
			left = append(left, "link "+l+" in the host's namespace")
		}
	}
	return left
}

// Inodes are the namespaces' inodes (for Leftovers after Close).
func (w *World) Inodes() []uint64 { return []uint64{nsInode(w.D), nsInode(w.U)} }
