package main

import (
	"errors"
	"log/slog"
	"net"
	"net/http"

	"agentjail/daemon"
)

// serveMetrics serves srv's metrics on ml ([metrics] listen; nothing when
// nil) and returns what stops it.
func serveMetrics(srv *daemon.Server, ml net.Listener, log *slog.Logger) (stop func()) {
	if ml == nil {
		return func() {}
	}
	hs := srv.MetricsServer()
	go func() {
		if err := hs.Serve(ml); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", "addr", ml.Addr().String(), "err", err)
		}
	}()
	log.Info("serving metrics", "addr", "http://"+ml.Addr().String()+"/metrics")
	return func() { _ = hs.Close() }
}
