package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"agentjail/daemon"
)

// A jailBackend is where `agentjail mcp` sends its requests: the HTTP API
// of docs/contract.md §2 and §6, spoken to a daemon on its socket
// (socketBackend), to a daemon's remote listener (urlBackend, --url,
// docs/contract.md §7), or to a daemon inside this process
// (localBackend).
type jailBackend interface {
	// do sends one request, with body as its JSON (nil: none), and
	// returns the answer's status and body. Cancelling ctx closes the
	// connection: the daemon ends a run in flight ("cancelled").
	do(ctx context.Context, method, path string, body any) (int, []byte, error)
	// stream is do for a POST whose body asks for a stream: the output
	// goes to out as it comes (readStream).
	stream(ctx context.Context, path string, body any, out *liveOutput) (int, []byte, error)
	// where names the backend for people: "the daemon on PATH".
	where() string
	// close ends what the backend holds (a local daemon: every jail and
	// session), waiting at most until ctx is done.
	close(ctx context.Context) error
}

// socketBackend is a daemon on a Unix socket, reached as `agentjail run
// --socket` reaches it (who listens is checked at each connection:
// trustedServer), on connections kept alive between calls: a new
// connection per call costs the daemon more than the call's own work of
// a warm run of `pass` (scripts/benchmarks/bench_mcp.py).
type socketBackend struct {
	sock   string
	client *http.Client
}

func newSocketBackend(sock string) *socketBackend {
	c := trustedClient(sock)
	c.Transport.(*http.Transport).MaxIdleConnsPerHost = 4
	return &socketBackend{sock: sock, client: c}
}

func (b *socketBackend) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	return httpDo(ctx, b.client, "daemon on "+b.sock, method, path, body)
}

func (b *socketBackend) stream(ctx context.Context, path string, body any, out *liveOutput) (int, []byte, error) {
	return httpStream(ctx, b.client, "daemon on "+b.sock, path, body, out)
}

func (b *socketBackend) where() string { return "the agentjail daemon on " + b.sock }

func (b *socketBackend) close(context.Context) error {
	b.client.CloseIdleConnections()
	return nil
}

// httpDo sends one request with client to the daemon named where, with
// body as its JSON (nil: none), and returns the answer's status and body.
// Cancelling ctx closes the connection.
func httpDo(ctx context.Context, client *http.Client, where, method, path string, body any) (int, []byte, error) {
	hr, err := jsonRequest(ctx, method, "http://agentjail"+path, body)
	if err != nil {
		return 0, nil, err
	}
	resp, err := client.Do(hr)
	if err != nil {
		return 0, nil, transportError(ctx, where, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: reading the answer: %w", where, err)
	}
	return resp.StatusCode, out, nil
}

// localBackend is a daemon inside this process, for `agentjail mcp`
// without --socket: the configuration `agentjail run` reads without a
// daemon (--config, else /etc/agentjail/config.toml when it exists,
// else the defaults), the daemon's own handlers, runs and sessions, and
// no socket on the file system: each connection is a socketpair(2),
// whose peer credentials (SO_PEERCRED) are this process's own.
//
// It starts in the background, so that the MCP handshake does not wait
// for the environments' trial jails and zygotes; a request waits for it.
type localBackend struct {
	l      *pairListener
	client *http.Client
	ready  chan struct{} // closed once started (or failed: err)
	err    error

	mu   sync.Mutex
	stop func(ctx context.Context) error // set once started
}

// newLocalBackend starts a daemon in this process with cfg (read from
// path, "" for the defaults), logging to log.
func newLocalBackend(cfg *daemon.Config, path string, log *slog.Logger) *localBackend {
	b := &localBackend{l: newPairListener(), ready: make(chan struct{})}
	b.client = &http.Client{Transport: &http.Transport{
		DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return b.l.dial(ctx) },
		MaxIdleConnsPerHost: 4,
	}}
	go func() {
		defer close(b.ready)
		stop, err := startLocalDaemon(cfg, path, b.l, log)
		b.mu.Lock()
		defer b.mu.Unlock()
		b.err, b.stop = err, stop
		if err != nil {
			log.Error("agentjail mcp: cannot run jails in this process", "err", err)
		}
	}()
	return b
}

func (b *localBackend) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	if err := b.wait(ctx); err != nil {
		return 0, nil, err
	}
	return httpDo(ctx, b.client, "the daemon in this process", method, path, body)
}

func (b *localBackend) stream(ctx context.Context, path string, body any, out *liveOutput) (int, []byte, error) {
	if err := b.wait(ctx); err != nil {
		return 0, nil, err
	}
	return httpStream(ctx, b.client, "the daemon in this process", path, body, out)
}

// wait waits until the daemon in this process has started.
func (b *localBackend) wait(ctx context.Context) error {
	select {
	case <-b.ready:
	case <-ctx.Done():
		return fmt.Errorf("cancelled: %w", context.Cause(ctx))
	}
	if b.err != nil {
		return fmt.Errorf("jails cannot run inside agentjail mcp: %w; give it the daemon's socket (--socket PATH or AGENTJAIL_SOCKET), or run it as root", b.err)
	}
	return nil
}

func (b *localBackend) where() string { return "the daemon inside `agentjail mcp`" }

// close stops the daemon in this process as `agentjail serve` stops at a
// TERM: running jails end (kill_reason "shutdown" once ctx is done),
// every session ends, every jail's cgroup is removed.
func (b *localBackend) close(ctx context.Context) error {
	select {
	case <-b.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	b.client.CloseIdleConnections()
	b.mu.Lock()
	stop := b.stop
	b.stop = nil
	b.mu.Unlock()
	if stop == nil {
		return nil
	}
	return stop(ctx)
}

// startLocalDaemon makes the runner and the server of a daemon, as
// `agentjail serve` does with the same configuration, and serves on l.
// It leaves out what belongs to the one daemon of a host: its socket and
// systemd's notifications. stop shuts it down.
func startLocalDaemon(cfg *daemon.Config, path string, l net.Listener, log *slog.Logger) (stop func(context.Context) error, err error) {
	if err := cfg.CheckHost(path, ""); err != nil {
		return nil, err
	}
	runner, exe, err := daemonRunner(cfg)
	if err != nil {
		return nil, err
	}
	// The jails of a process that died without its clean-up (kill -9):
	// Stale names only groups whose owner is gone (cgroup/doc.go), never
	// a live daemon's or another `agentjail mcp`'s.
	stale, err := runner.Cgroups.Stale()
	if err != nil {
		runner.Close()
		exe.Close()
		return nil, fmt.Errorf("start-up clean-up: %w", err)
	}
	for _, name := range stale {
		if err := runner.Cgroups.Remove(name); err != nil {
			log.Warn("a jail left by a process that died could not be removed", "id", name, "err", err)
			continue
		}
		log.Warn("removed a jail left by a process that died", "id", name)
	}
	// The configuration's maxima hold as in a daemon: the requests come
	// from a model, and a session's CPU budget defaults to the maximum.
	policy := cfg.Policy()
	stopEnvs, err := daemon.OpenEnvironments(cfg, policy.Environments, runner, log)
	if err != nil {
		runner.Close()
		exe.Close()
		return nil, err
	}
	opts := serverOptions(cfg, policy, runner, log)
	opts.AllowUIDs = []uint32{uint32(os.Getuid())}
	srv := daemon.NewServer(opts, runner)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	return func(ctx context.Context) error {
		err := srv.Shutdown(ctx)
		if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		stopEnvs()
		runner.Close()
		exe.Close()
		return err
	}, nil
}

// pairListener is a net.Listener without an address: dial makes a
// connected pair of Unix sockets and hands one end to Accept. Nothing
// outside this process can connect to it.
type pairListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPairListener() *pairListener {
	return &pairListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pairListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pairListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pairListener) Addr() net.Addr { return pairAddr{} }

type pairAddr struct{}

func (pairAddr) Network() string { return "unix" }
func (pairAddr) String() string  { return "agentjail-mcp (in-process)" }

// dial connects to the listener: one end of a socketpair for the caller,
// the other for Accept.
func (l *pairListener) dial(ctx context.Context) (net.Conn, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socketpair", err)
	}
	client, err := fileConn(fds[0], "client")
	if err != nil {
		unix.Close(fds[1])
		return nil, err
	}
	server, err := fileConn(fds[1], "server")
	if err != nil {
		client.Close()
		return nil, err
	}
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		err = net.ErrClosed
	case <-ctx.Done():
		err = ctx.Err()
	}
	client.Close()
	server.Close()
	return nil, err
}

// fileConn makes a net.Conn of a socket fd, which it takes.
func fileConn(fd int, name string) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), name)
	defer f.Close() // FileConn holds a duplicate
	return net.FileConn(f)
}
