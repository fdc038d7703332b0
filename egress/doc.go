// Package egress is the daemon's allowlisting HTTP(S) proxy: the one way a
// jail reaches the network, where its run asks for it (docs/contract.md
// section 8). A jail keeps no route; the daemon opens a listener at
// 127.0.0.1:3128 inside the run's network namespace and hands it to
// Proxy.Start, which serves it until Run.Close.
//
// # One connection, step by step
//
//	jail                          proxy (this package)             upstream
//	 | CONNECT host:port  ------>  parse the request line
//	 |   or GET http://host/...    name or IP literal normalised   (hostname.go)
//	 |                             match against the policy        (policy.go)
//	 |                               refused: 403, never resolved
//	 |                             resolve with the resolver       (dial.go)
//	 |                             dial; the Control hook checks
//	 |                               the address actually connected (guard.go)
//	 |                                                   ------>  TCP connect
//	 | <------ 200 (CONNECT)
//	 | ClientHello ------------->  SNI must equal the CONNECT host (sni.go)
//	 |                               on port 443, or when the first
//	 |                               bytes are a TLS handshake
//	 | <=======================>   relay, counting bytes both ways  (relay.go)
//	 |                             per-run caps: connections,
//	 |                               bytes, idle time
//
// An absolute-form request (GET http://host/path) is checked the same way,
// and its Host header must name the same host and port; it is sent on in
// origin form with "Connection: close", and only the response comes back:
// a second request on the same client connection is never relayed.
//
// # Invariants
//
//   - A name the policy refuses is never looked up: the match runs on the
//     text the client sent, before any resolver is asked.
//   - The address checked is the one connect(2) gets (net.Dialer.Control),
//     so a name that resolves to a public address and then rebinds to a
//     private one is refused at connect time.
//   - IP literals are read as the kernel's inet_aton reads them (decimal,
//     hex and octal parts, one to four of them), or refused.
//   - Every connection, allowed or blocked, is in the run's Report (up to
//     MaxListed of them; the counts are exact).
//   - Run.Close closes the listener and every connection, and waits for
//     every goroutine of the run.
package egress
