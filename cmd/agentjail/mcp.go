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
// socket (--socket, or AGENTJAIL_SOCKET), to a daemon's remote listener
// (--url, or AGENTJAIL_URL: mcp_remote.go), or, when none is given, to a
// daemon inside this process with the configuration `agentjail run` reads
// without a daemon (mcp_backend.go). The protocol alone is on stdout;
// logs go to stderr.
//
// It stops when the client closes stdin, or at SIGTERM, SIGINT or SIGHUP:
// calls in flight are cancelled (the daemon ends their jails), the
// sessions it started are ended, and a daemon inside it stops with every
// jail and cgroup it made.

const mcpUsage = `usage: agentjail mcp [--socket PATH | --url URL [--token-file FILE] [--ca FILE]] [--config FILE]

A Model Context Protocol server on stdin/stdout, with the tools run_python,
run_command, session_start, session_run, session_end and list_environments.

  --socket PATH      send the runs to the agentjail daemon on PATH (default:
                     $AGENTJAIL_SOCKET); without it or --url, jails run in this
                     process (as root, or a user with delegated cgroups)
  --url URL          send them to a daemon's remote listener instead,
                     https://HOST:PORT (default: $AGENTJAIL_URL)
  --token-file FILE  with --url: a file that holds the bearer token (default:
                     $AGENTJAIL_TOKEN holds the token itself)
  --ca FILE          with --url: PEM certificates to trust for the daemon's
                     (default: the system's)
  --config FILE      without a daemon: the configuration to run with (default:
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
	var remote remoteURL
	fs.StringVar(&remote.url, "url", os.Getenv("AGENTJAIL_URL"), "")
	fs.StringVar(&remote.tokenFile, "token-file", "", "")
	fs.StringVar(&remote.ca, "ca", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, mcpUsage)
			return 0
		}
		fmt.Fprintf(stderr, "agentjail mcp: %v\n%s", err, mcpUsage)
		return exitUsage
	}
	// A flag wins over the other's variable; of the two variables, the URL.
	if flagGiven(fs, "socket") && !flagGiven(fs, "url") {
		remote.url = ""
	} else if remote.url != "" {
		*sock = ""
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "agentjail mcp: unexpected argument %q\n%s", fs.Arg(0), mcpUsage)
		return exitUsage
	case flagGiven(fs, "url") && flagGiven(fs, "socket"):
		fmt.Fprintf(stderr, "agentjail mcp: --url and --socket: give one daemon\n%s", mcpUsage)
		return exitUsage
	case remote.url == "" && (remote.tokenFile != "" || remote.ca != ""):
		fmt.Fprintf(stderr, "agentjail mcp: --token-file and --ca go with --url\n%s", mcpUsage)
		return exitUsage
	case (*sock != "" || remote.url != "") && *config != "":
		fmt.Fprintf(stderr, "agentjail mcp: --config: the daemon runs with its own configuration; --config is for jails run without a daemon\n")
		return exitUsage
	}

	// Through a daemon, the schemas show the built-in limits (the
	// daemon's own may differ, and it names what it refuses).
	cfg := daemon.DefaultConfig()
	var backend jailBackend
	var log *slog.Logger
	if remote.url != "" {
		b, err := newURLBackend(remote)
		if err != nil {
			fmt.Fprintf(stderr, "agentjail mcp: %v\n", err)
			return exitUsage
		}
		log = slog.New(slog.NewTextHandler(stderr, nil))
		backend = b
	} else if *sock != "" {
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
	return serveMCP(backend, cfg, *sock != "" || remote.url != "", stdin, stdout, log)
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

// flagGiven says whether the command line set the flag (not its default).
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
