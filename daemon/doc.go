// Package daemon holds the public interface of agentjail (CONTRACT.md): the
// run request and result objects shared by `agentjail run` and the HTTP
// API, and the feedback sentences derived from a result. The Unix-socket
// server, admission control, metrics and the Python harness come with it.
// It never makes isolation system calls: that is package nsjail.
package daemon
