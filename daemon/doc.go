// Package daemon holds the public interface of agentjail (docs/contract.md): the
// run request and result objects shared by `agentjail run` and the HTTP
// API, the Unix-socket server with its admission control, peer checks and
// metrics, and the daemon's configuration. The harness that runs in every
// jail, the verdicts on a request's tests and the feedback sentences are
// package harness (daemon/harness). It never makes isolation system calls:
// that is package nsjail.
package daemon
