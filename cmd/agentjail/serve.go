package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
	sdaemon "github.com/coreos/go-systemd/v22/daemon"

	"agentjail/daemon"
	"agentjail/nsjail"
)

// cmdServe is `agentjail serve`: the daemon. Start-up errors (bad
// configuration, socket in use, no cgroup) exit 1 with a message that
// names what to fix; SIGTERM or SIGINT stop it gracefully with exit 0.
func cmdServe(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("agentjail serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", daemon.DefaultConfigPath, "configuration file (TOML); a missing default file means all defaults")
	socketPath := fs.String("socket", "", "socket path (overrides [socket] path; ignored under systemd socket activation)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agentjail serve: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "config" })
	cfg, err := daemon.LoadConfig(*configPath)
	if errors.Is(err, os.ErrNotExist) && !explicit {
		cfg, err = daemon.DefaultConfig(), nil
	}
	if err != nil {
		fmt.Fprintf(stderr, "agentjail serve: %v\n", err)
		return 1
	}
	if *socketPath != "" {
		if err := daemon.CheckSocketPath(*socketPath); err != nil {
			fmt.Fprintf(stderr, "agentjail serve: --socket: %v\n", err)
			return exitUsage
		}
		cfg.Socket.Path = *socketPath
	}
	var h slog.Handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.SlogLevel()})
	if cfg.Log.Format == "json" {
		h = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.SlogLevel()})
	}
	log := slog.New(h)
	if !explicit {
		*configPath = "" // no file was read
		if _, err := os.Stat(daemon.DefaultConfigPath); err == nil {
			*configPath = daemon.DefaultConfigPath
		}
	}
	if err := serve(cfg, *configPath, log); err != nil {
		log.Error("agentjail serve: " + err.Error())
		return 1
	}
	return 0
}

func serve(cfg *daemon.Config, configPath string, log *slog.Logger) error {
	// What the environments need from this host: their mounts (each
	// rule), their pythons.
	if err := cfg.CheckHost(configPath, cfg.Socket.Path); err != nil {
		return err
	}
	warnHost(cfg, log)
	runner, exe, err := daemonRunner(cfg)
	if err != nil {
		return err
	}
	defer exe.Close()

	if runner.Cgroups.AttachWaits() {
		log.Warn("cgroup v2 is mounted without favordynmods: each jail's move into its cgroup waits an RCU grace period (several ms) when jails are not started back to back; remount /sys/fs/cgroup with favordynmods (Linux 6.0+) to avoid it")
	}
	if err := removeStale(runner, log); err != nil {
		return err
	}

	rl, ro, err := daemon.OpenRemote(cfg, log) // [remote]: TCP with TLS and tokens; before the socket, which a failure would leave
	if err != nil {
		return err
	}
	defer closeIfAny(rl)
	// Listen relies on the socket's directory being writable by root only
	// (RuntimeDirectory=), or another user could swap the socket between
	// the bind and the rename. (The umask it sets for the bind does not
	// reach jails: their init stage sets its own.)
	l, owned, err := listener(cfg)
	if err != nil {
		return err
	}
	ml, err := daemon.ListenMetrics(cfg)
	if err != nil {
		return err
	}
	if ml != nil {
		defer ml.Close()
	}
	// Each environment: the host's /etc its libraries need, a trial jail
	// (python's version, preload, matplotlib's font cache), then its
	// jails kept ahead of requests. They die with this process
	// (Pdeathsig), and Close ends them at a clean stop.
	policy := cfg.Policy()
	defer runner.Close()
	stopEnvs, err := daemon.OpenEnvironments(cfg, policy.Environments, runner, log)
	if err != nil {
		return err
	}
	defer stopEnvs() // before runner.Close: it may start jails until it returns
	opts := serverOptions(cfg, policy, runner, log)
	opts.AllowUIDs, opts.AllowGIDs = cfg.Peers.UIDs, cfg.Peers.GIDs
	srv := daemon.NewServer(opts, runner)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	remoteDone := serveRemote(srv, rl, ro, served, log)
	defer serveMetrics(srv, ml, log)()

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	_, _ = sdaemon.SdNotify(false, sdaemon.SdNotifyReady)
	logServing(cfg, policy, runner, l, owned, log)

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case sig := <-sigs:
		return shutdown(cfg, srv, l, sig, served, remoteDone, log)
	}
}

// removeStale removes the jails' cgroups a previous instance that
// crashed (kill -9) left; their processes died with it (the jails' init
// has a parent-death signal), but anything still in them is killed here.
func removeStale(runner *nsjail.Runner, log *slog.Logger) error {
	stale, err := runner.Cgroups.Stale()
	if err != nil {
		return fmt.Errorf("start-up clean-up: %w", err)
	}
	for _, name := range stale {
		if err := runner.Cgroups.Remove(name); err != nil {
			return fmt.Errorf("start-up clean-up: %w", err)
		}
		log.Warn("removed a jail left by a previous instance", "id", name)
	}
	return nil
}

// logServing says the daemon is serving, where and with what.
func logServing(cfg *daemon.Config, policy daemon.Policy, runner *nsjail.Runner, l net.Listener, owned bool, log *slog.Logger) {
	addr := cfg.Socket.Path
	if !owned {
		addr = l.Addr().String() + " (systemd socket activation)"
	}
	log.Info("serving", "socket", addr, "version", version, "cgroup", runner.Cgroups.Version(),
		"max_concurrent", cfg.Admission.MaxConcurrent, "queue_length", cfg.Admission.QueueLength,
		"environments", len(policy.Environments), "start", cfg.Jail.Start, "warm_ahead", cfg.WarmAhead(), "prepared_jails", cfg.Prepared(),
		"max_sessions", cfg.Admission.MaxSessions, "gomaxprocs", runtime.GOMAXPROCS(0))
	if _, err := nsjail.SealedStandaloneInit(); err != nil {
		log.Warn("jails start from a copy of this binary, about 0.8 ms of CPU more each than from the standalone init", "why", err.Error())
	}
	if _, err := nsjail.ZygoteLoop(); err != nil {
		log.Warn("zygotes serve their forks from python, at about twice their CPU a warm run from the C loop", "why", err.Error())
	}
}

// shutdown stops srv gracefully at the signal sig: the runs may finish
// within the shutdown grace, then the socket goes and the listeners
// (served, remoteDone) are waited for.
func shutdown(cfg *daemon.Config, srv *daemon.Server, l net.Listener, sig os.Signal, served <-chan error, remoteDone <-chan struct{}, log *slog.Logger) error {
	grace := time.Duration(cfg.Admission.ShutdownGrace)
	log.Info("stopping", "signal", sig.String(), "grace", grace.String(), "running", srv.Running(), "queued", srv.Queued())
	_, _ = sdaemon.SdNotify(false, sdaemon.SdNotifyStopping)
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(ctx)
	_ = daemon.RemoveSocket(l) // only a socket Listen made, still at its path
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	<-remoteDone
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

// listener is the socket systemd passed (socket activation), or one
// created at the configured path (owned: removed again at exit).
func listener(cfg *daemon.Config) (l net.Listener, owned bool, err error) {
	ls, err := activation.Listeners()
	if err != nil {
		return nil, false, fmt.Errorf("systemd socket activation: %w", err)
	}
	if len(ls) > 0 {
		if len(ls) > 1 || ls[0] == nil {
			return nil, false, fmt.Errorf("systemd socket activation: want one stream socket, got %d", len(ls))
		}
		return ls[0], false, nil
	}
	gid, err := cfg.SocketGID()
	if err != nil {
		return nil, false, fmt.Errorf("socket.group: %w", err)
	}
	l, err = daemon.Listen(cfg.Socket.Path, cfg.SocketMode(), gid)
	if err != nil {
		return nil, false, err
	}
	return l, true, nil
}

// serveRemote serves the remote listener rl (nil: none) beside the socket;
// the channel closes when it has stopped. If it fails while the daemon
// runs, the failure goes to served and the daemon stops.
func serveRemote(srv *daemon.Server, rl net.Listener, ro *daemon.RemoteOptions, served chan<- error, log *slog.Logger) <-chan struct{} {
	done := make(chan struct{})
	if rl == nil {
		close(done)
		return done
	}
	log.Info("serving remote", "listen", rl.Addr().String(), "tls", ro.TLS != nil, "mtls", ro.TLS != nil && ro.TLS.ClientCAs != nil)
	go func() {
		defer close(done)
		if err := srv.ServeRemote(rl, *ro); !errors.Is(err, http.ErrServerClosed) {
			select {
			case served <- fmt.Errorf("remote: %w", err):
			default:
			}
		}
	}()
	return done
}

func closeIfAny(l net.Listener) {
	if l != nil {
		_ = l.Close()
	}
}

// serverOptions are the daemon's options from the configuration, for
// `serve` and for the daemon inside `agentjail mcp`; the caller says who
// may connect (AllowUIDs, AllowGIDs).
func serverOptions(cfg *daemon.Config, policy daemon.Policy, runner *nsjail.Runner, log *slog.Logger) daemon.Options {
	return daemon.Options{
		Policy:          policy,
		MaxConcurrent:   cfg.Admission.MaxConcurrent,
		QueueLength:     cfg.Admission.QueueLength,
		MaxRequestBytes: cfg.Admission.MaxRequestBytes,
		MaxQueuedBytes:  cfg.Admission.MaxQueuedBytes,
		Version:         version,
		Node:            cfg.NodeName(),
		Advertise:       cfg.AdvertiseAddr(),
		CgroupVersion:   string(runner.Cgroups.Version()),
		Logger:          log,
		PreparedReady:   func() int { n, _ := runner.PreparedStats(); return n },
		Warm:            runner.WarmStats,
		WarmUp:          func(name string) bool { _, up := runner.WarmInfo(name); return up },
		MaxSessions:     cfg.Admission.MaxSessions,
		// Sessions: [sessions] of the configuration.
		SessionIdleTimeout:    time.Duration(cfg.Sessions.IdleTimeout),
		SessionMaxIdleTimeout: time.Duration(cfg.Sessions.MaxIdleTimeout),
		SessionMaxLifetime:    time.Duration(cfg.Sessions.MaxLifetime),
	}
}

// daemonRunner makes the runner of a daemon with cfg, for `agentjail
// serve` and the daemon inside `agentjail mcp`: its uid range, each
// environment's /etc written once for its jails, and every init stage run
// from a sealed memfd, so that nothing a jail can reach may ever rewrite
// what the next jail executes: the standalone init NewRunner set, or else
// a sealed copy of this binary (exe, nil with the standalone init). The
// caller closes both (exe.Close does nothing when exe is nil).
func daemonRunner(cfg *daemon.Config) (runner *nsjail.Runner, exe *os.File, err error) {
	runner, err = nsjail.NewRunner()
	if err != nil {
		return nil, nil, err
	}
	runner.UIDs = cfg.UIDRange()
	runner.ShareEtc = true
	runner.ScratchNoexec = cfg.Jail.ScratchNoexec
	if err := runner.UIDs.Validate(os.Getuid()); err != nil {
		runner.Close()
		return nil, nil, fmt.Errorf("jail.uid_base/uid_count: %w", err)
	}
	if runner.ExeFile != nil {
		return runner, nil, nil
	}
	exe, err = nsjail.SealedExe()
	if err != nil {
		runner.Close()
		return nil, nil, fmt.Errorf("sealed copy of the binary: %w", err)
	}
	runner.ExeFile = exe
	return runner, exe, nil
}
