// Package egresstest is the network egress attack catalogue of issue 33
// (docs/testing.md, "The egress world"): jailed programs that try to get
// past the daemon's proxy, in warm, cold and session mode, against a
// daemon started in a network of the test's own (internal/networld), and
// the real clients (urllib, http.client, requests, curl, pip) that must
// get through it. The tests use only the daemon's public interface: its
// HTTP API over the Unix socket and its configuration file.
package egresstest
