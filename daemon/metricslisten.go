package daemon

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"
)

// MetricsConfig is [metrics]: an optional TCP listener for Prometheus. The
// Unix socket serves GET /metrics to allowed peers anyway; this listener
// serves GET /metrics alone (every other path is 404 there), to whoever
// can reach its address.
type MetricsConfig struct {
	Listen string `toml:"listen"` // "host:port", ":port" = 127.0.0.1:port; "" = off (default)
}

// MetricsAddr is the address of the metrics listener, "" when it is off;
// a ":port" without host is on the loopback address.
func (c *Config) MetricsAddr() string {
	l := c.Metrics.Listen
	if l == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(l)
	if err != nil {
		return l // Validate reports it
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// validateMetrics checks [metrics].
func (c *Config) validateMetrics(bad func(key, format string, a ...any)) {
	l := c.Metrics.Listen
	if l == "" {
		return
	}
	host, port, err := net.SplitHostPort(l)
	if err != nil {
		bad("metrics.listen", "%q is not host:port (write e.g. \"127.0.0.1:9464\", or \":9464\" for the loopback address)", l)
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		bad("metrics.listen", "port %q of %q is not a number from 1 to 65535", port, l)
	}
	if host != "" && host != "localhost" && net.ParseIP(host) == nil {
		bad("metrics.listen", "host %q of %q is not an IP address or localhost (a name could resolve to another interface)", host, l)
	}
}

// ListenMetrics opens the metrics listener of the configuration (nil, nil
// when it is off).
func ListenMetrics(c *Config) (net.Listener, error) {
	addr := c.MetricsAddr()
	if addr == "" {
		return nil, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics.listen: %w", err)
	}
	return l, nil
}

// MetricsServer is an HTTP server for the metrics listener: GET (or HEAD)
// /metrics is the server's metrics, as on the socket; every other path is
// 404 and every other method 405, so that nothing of the API (no run, no
// session, no health) is reachable through it. It checks no peer: give it
// an address only the scraper can reach.
func (s *Server) MetricsServer() *http.Server {
	metrics := s.m.handler()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path != "/metrics":
			http.Error(w, "not found: this listener serves GET /metrics only", http.StatusNotFound)
		case r.Method != http.MethodGet && r.Method != http.MethodHead:
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed: GET /metrics only", http.StatusMethodNotAllowed)
		default:
			metrics.ServeHTTP(w, r)
		}
	})
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    8 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}
