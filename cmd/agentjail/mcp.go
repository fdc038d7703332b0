package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentjail/daemon"
)

// `agentjail mcp`: a Model Context Protocol server on stdin and stdout
// (docs/contract.md §9), for agents whose host starts it as a command. Its
// tools (mcp_tools.go) send the daemon's own requests to a daemon on its
// socket (--socket, or AGENTJAIL_SOCKET), or, when none is given, to a
// daemon inside this process with the configuration `agentjail run` reads
// without a daemon (mcp_backend.go). The protocol alone is on stdout;
// logs go to stderr.
//
// It stops when the client closes stdin, or at SIGTERM, SIGINT or SIGHUP:
// calls in flight are cancelled (the daemon ends their jails), the
// sessions it started are ended, and a daemon inside it stops with every
// jail and cgroup it made.

const mcpUsage = `usage: agentjail mcp [--socket PATH] [--config FILE]

A Model Context Protocol server on stdin/stdout, with the tools run_python,
session_start, session_run, session_end and list_environments.

  --socket PATH   send the runs to the agentjail daemon on PATH (default:
                  $AGENTJAIL_SOCKET); without it, jails run in this process
                  (as root, or a user with delegated cgroups)
  --config FILE   without --socket: the configuration to run with (default:
                  /etc/agentjail/config.toml when it exists, else the defaults)
`

// mcpStopGrace bounds the stop: calls in flight end, sessions end, the
// daemon inside stops.
const mcpStopGrace = 10 * time.Second

func cmdMCP(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agentjail mcp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	sock := fs.String("socket", os.Getenv("AGENTJAIL_SOCKET"), "")
	config := fs.String("config", "", "")
	url := fs.String("url", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, mcpUsage)
			return 0
		}
		fmt.Fprintf(stderr, "agentjail mcp: %v\n%s", err, mcpUsage)
		return exitUsage
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "agentjail mcp: unexpected argument %q\n%s", fs.Arg(0), mcpUsage)
		return exitUsage
	case *url != "":
		// Remote daemons (docs/contract.md §7) are a jailBackend to come.
		fmt.Fprintf(stderr, "agentjail mcp: --url: remote daemons are not supported yet; run agentjail mcp on the daemon's host with --socket\n")
		return exitUsage
	case *sock != "" && *config != "":
		fmt.Fprintf(stderr, "agentjail mcp: --config: the daemon runs with its own configuration; --config is for jails run without a daemon\n")
		return exitUsage
	}

	// Through a daemon, the schemas show the built-in limits (the
	// daemon's own may differ, and it names what it refuses).
	cfg := daemon.DefaultConfig()
	var backend jailBackend
	var log *slog.Logger
	if *sock != "" {
		log = slog.New(slog.NewTextHandler(stderr, nil))
		backend = newSocketBackend(*sock)
	} else {
		c, path, err := localConfig(*config)
		if err != nil {
			fmt.Fprintf(stderr, "agentjail mcp: %v\n", err)
			return exitUsage
		}
		cfg = c
		log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.SlogLevel()}))
		backend = newLocalBackend(cfg, path, log)
	}
	return serveMCP(backend, cfg, *sock != "", stdin, stdout, log)
}

// serveMCP serves the tools on stdin and stdout until the client goes
// away or a signal comes, then stops everything it started.
func serveMCP(backend jailBackend, cfg *daemon.Config, daemonMode bool, stdin io.Reader, stdout io.Writer, log *slog.Logger) int {
	ctx, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stopSignals()
	// A signal ends the calls in flight at once: the SDK waits for them
	// before Run returns.
	stopping, stopCalls := context.WithCancel(ctx)
	tools := &mcpTools{b: backend, log: log, cfg: cfg, daemonMode: daemonMode, stopping: stopping, sessions: map[string]bool{}}
	server := mcp.NewServer(&mcp.Implementation{Name: "agentjail", Title: "agentjail: Python in a jail", Version: version}, &mcp.ServerOptions{
		Logger: slog.New(sdkLogHandler{log.Handler()}), // its warnings and errors only: it logs each session at info
		Instructions: "Runs Python code in isolated, resource-limited jails: run_python for one program, session_start/session_run/session_end " +
			"for an interpreter kept across calls, list_environments for the Python environments and their packages.",
	})
	tools.register(server)
	in, ok := stdin.(io.ReadCloser)
	if !ok {
		in = io.NopCloser(stdin)
	}
	err := server.Run(ctx, &mcp.IOTransport{Reader: in, Writer: nopWriteCloser{stdout}})
	code := 0
	switch {
	case ctx.Err() != nil:
		log.Info("agentjail mcp: stopping", "why", "signal")
	case err != nil && !errors.Is(err, io.EOF):
		log.Error("agentjail mcp: the client's connection failed", "err", err)
		code = 1
	default:
		log.Info("agentjail mcp: stopping", "why", "the client closed the connection")
	}

	// Every call in flight ends: the daemon ends its jail ("cancelled").
	stopCalls()
	waited := make(chan struct{})
	go func() { tools.inflight.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(mcpStopGrace):
		log.Warn("agentjail mcp: calls in flight did not end in time")
	}
	sctx, cancel := context.WithTimeout(context.Background(), mcpStopGrace)
	defer cancel()
	tools.endSessions(sctx)
	if err := backend.close(sctx); err != nil {
		log.Error("agentjail mcp: stopping the jails in this process", "err", err)
		code = 1
	}
	return code
}

// sdkLogHandler passes on the SDK's warnings and errors.
type sdkLogHandler struct{ slog.Handler }

func (h sdkLogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

func (h sdkLogHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return sdkLogHandler{h.Handler.WithAttrs(a)}
}
func (h sdkLogHandler) WithGroup(name string) slog.Handler {
	return sdkLogHandler{h.Handler.WithGroup(name)}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
