package daemon

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the daemon's Prometheus series. Each server has its own
// registry, so that tests can run several servers in one process.
type metrics struct {
	reg       *prometheus.Registry
	runs      *prometheus.CounterVec
	rejected  *prometheus.CounterVec
	wall      prometheus.Histogram
	queueWait prometheus.Histogram
	peak      prometheus.Histogram
	violation prometheus.Counter
	prepared  prometheus.Counter
	starts    *prometheus.CounterVec
}

func newMetrics(adm *admission, preparedReady func() int, warm func() (up, ahead int, restarts, fallbacks int64)) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentjail_runs_total",
			Help: "Programs run to their end, by result status and kill reason (empty unless killed).",
		}, []string{"status", "kill_reason"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentjail_requests_rejected_total",
			Help: "Requests answered with an error instead of a result, by error code (queue_full, forbidden, invalid_request, too_large, shutting_down, setup_failed, ...).",
		}, []string{"code"}),
		wall: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "agentjail_run_wall_seconds",
			Help:    "Wall time of programs, from the exec of python3 to the end of the jail's last process.",
			Buckets: []float64{.01, .02, .05, .1, .2, .5, 1, 2, 5, 10, 30, 60, 300},
		}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "agentjail_queue_wait_seconds",
			Help:    "Time requests waited for a free slot.",
			Buckets: []float64{.001, .01, .1, .5, 1, 5, 10, 30, 60},
		}),
		peak: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "agentjail_run_peak_memory_bytes",
			Help:    "Peak memory of programs (the jail cgroup's high-water mark since the exec of python3).",
			Buckets: prometheus.ExponentialBuckets(4<<20, 2, 11), // 4 MiB .. 4 GiB
		}),
		violation: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agentjail_forbidden_syscall_runs_total",
			Help: "Runs in which the program made at least one forbidden system call.",
		}),
		prepared: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agentjail_runs_prepared_total",
			Help: "Runs whose jail was prepared ahead of the request (jail.prepared_jails); the others started their jail on the request's path.",
		}),
		starts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentjail_runs_by_start_total",
			Help: "Programs run to their end, by environment and by how their interpreter started (warm: a fork of the zygote; cold: a fresh python3).",
		}, []string{"environment", "start"}),
	}
	if warm != nil {
		stat := func(i int) func() float64 {
			return func() float64 {
				up, ahead, restarts, fallbacks := warm()
				return [...]float64{float64(up), float64(ahead), float64(restarts), float64(fallbacks)}[i]
			}
		}
		m.reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agentjail_zygotes_up", Help: "Environments whose zygote is up now."}, stat(0)),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agentjail_warm_runs_ahead", Help: "Warm runs forked ahead of requests, waiting now."}, stat(1)),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "agentjail_zygote_restarts_total", Help: "Zygotes started after each environment's first: replacements of one that died, failed or was retired (jail.zygote_max_forks)."}, stat(2)),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "agentjail_warm_fallbacks_total", Help: "Warm requests run cold because no zygote of their environment was up."}, stat(3)),
		)
	}
	if preparedReady != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agentjail_prepared_jails", Help: "Prepared jails waiting for a request now."},
			func() float64 { return float64(preparedReady()) }))
	}
	m.reg.MustRegister(m.runs, m.rejected, m.wall, m.queueWait, m.peak, m.violation, m.prepared, m.starts,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agentjail_running_jails", Help: "Jails running now."},
			func() float64 { return float64(adm.running()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agentjail_queue_depth", Help: "Requests waiting for a slot now."},
			func() float64 { return float64(adm.waiting()) }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

func (m *metrics) observe(r *Result) {
	m.runs.WithLabelValues(r.Status, r.KillReason).Inc()
	m.starts.WithLabelValues(r.Environment, r.Start).Inc()
	m.wall.Observe(r.WallTimeMs / 1000)
	if r.PeakMemoryBytes != nil {
		m.peak.Observe(float64(*r.PeakMemoryBytes))
	}
	if r.Seccomp != nil {
		m.violation.Inc()
	}
}
