package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"agentjail/nsjail"
)

// OpenEnvironments makes each environment ready: its /etc from the host,
// its trial jail (Config.ProbeAll: a preload that does not import
// stops the start), the cold jails prepared ahead for "default", and its
// zygote. Then, in the background, matplotlib's font cache of each
// environment that has matplotlib (Environment.FontCache: about as long
// as importing matplotlib, which the start does not wait for); once built,
// its jails from then on share it, their zygote and prepared jails
// replaced. stop ends that work and waits for it: call it before
// runner.Close.
func OpenEnvironments(cfg *Config, envs map[string]*Environment, runner *nsjail.Runner, log *slog.Logger) (stop func(), err error) {
	for _, e := range envs {
		etc, err := nsjail.HostEtc(e.ReadOnlyMounts)
		if err != nil {
			return nil, fmt.Errorf("environment %s: the host's /etc: %w", e.Name, err)
		}
		e.Etc = etc
	}
	if shared := nsjail.SharedUserRlimits(); len(shared) > 0 {
		systemd, shell := sharedRlimitsFix(shared)
		log.Warn(sharedRlimitsMsg, "bounds", shared, "systemd", systemd, "shell", shell)
	}
	t0 := time.Now()
	if err := cfg.ProbeAll(context.Background(), runner, envs); err != nil {
		return nil, err
	}
	for _, e := range envs {
		log.Info("environment", "name", e.Name, "python", e.Python, "version", e.PythonVersion, "read_only_mounts", e.ReadOnlyMounts,
			"preload", e.Preload, "packages", len(e.Packages), "probe_ms", time.Since(t0).Milliseconds())
		keepJails(cfg, e, e.CurrentEtc(), runner, log)
	}
	// Serve once the zygotes are up, so that the first requests run warm
	// as the later ones do; one that is slow to come up (a heavy preload
	// on a loaded host) is waited for at most zygoteWait, and its
	// requests start cold until it is up.
	deadline := time.Now().Add(zygoteWait)
	for _, e := range envs {
		for {
			if _, up := runner.WarmInfo(e.Name); up {
				break
			}
			if time.Now().After(deadline) {
				log.Warn("zygote not up yet; its warm requests start cold until it is", "environment", e.Name, "waited", zygoteWait.String())
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, e := range envs {
		e.fontDone = make(chan struct{})
		e.fontCache.Store(FontCacheBuilding)
		wg.Go(func() {
			defer close(e.fontDone)
			t := time.Now()
			etc, err := e.FontCache(ctx, runner, cfg.TrialLimits())
			state := FontCacheNone
			switch {
			case ctx.Err() != nil:
			case err != nil:
				log.Warn("matplotlib's font cache could not be built; each run that draws builds its own", "environment", e.Name, "err", err)
			case etc != nil:
				// The jails with the cache first: until its zygote is up,
				// the old one serves the requests of either /etc.
				keepJails(cfg, e, etc, runner, log)
				e.setEtc(etc)
				state = FontCacheBuilt
				log.Info("matplotlib font cache built", "environment", e.Name, "file", etc.MatplotlibCache, "ms", time.Since(t).Milliseconds())
			}
			e.fontCache.Store(state)
		})
	}
	return func() { cancel(); wg.Wait() }, nil
}

// keepJails keeps environment e's jails ahead of requests, with /etc etc:
// its zygote, and for "default" the cold jails prepared ahead. A second
// call replaces the first's (KeepWarm and KeepPrepared replace by name).
func keepJails(cfg *Config, e *Environment, etc *nsjail.Etc, runner *nsjail.Runner, log *slog.Logger) {
	if e.Name == DefaultEnvironment && cfg.Prepared() > 0 {
		tpl := cfg.PreparedTemplate(e)
		tpl.Etc = etc
		tpl.OnError = func(err error) {
			log.Warn("could not prepare a jail; requests start their own until one can be", "err", err)
		}
		runner.KeepPrepared(cfg.Prepared(), tpl)
	}
	zs := cfg.ZygoteSpec(e)
	zs.Etc = etc
	zs.OnEvent = func(event string, err error) {
		switch {
		case err != nil:
			log.Warn("zygote "+event+"; its warm runs start cold until a new one is up", "environment", e.Name, "err", err)
		case event == "started":
			log.Debug("zygote started", "environment", e.Name)
		default:
			log.Info("zygote "+event, "environment", e.Name)
		}
	}
	runner.KeepWarm(zs)
}

// zygoteWait bounds how long the start-up waits for the zygotes.
const zygoteWait = 30 * time.Second
