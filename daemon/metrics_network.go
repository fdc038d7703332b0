package daemon

import (
	"github.com/prometheus/client_golang/prometheus"

	"agentjail/egress"
)

// countEgress registers the egress proxy's series and has e count into
// them: every connection by verdict and reason, and the bytes each way.
// Without egress (e nil) there are no such series.
func (m *metrics) countEgress(e *Egress) {
	if e == nil {
		return
	}
	conns := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentjail_egress_connections_total",
		Help: "Connections to the egress proxy, by verdict (allowed, blocked) and reason (why it was blocked, or what ended an allowed one; empty: it ended normally).",
	}, []string{"verdict", "reason"})
	bytes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentjail_egress_bytes_total",
		Help: "Bytes carried by the egress proxy: sent (from programs to upstreams) and received.",
	}, []string{"direction"})
	for verdict, reasons := range egress.Reasons {
		for _, r := range reasons {
			conns.WithLabelValues(verdict, r)
		}
	}
	sent, received := bytes.WithLabelValues("sent"), bytes.WithLabelValues("received")
	m.reg.MustRegister(conns, bytes)
	f := func(c egress.Connection) {
		conns.WithLabelValues(c.Verdict, c.Reason).Inc()
		sent.Add(float64(c.Sent))
		received.Add(float64(c.Received))
	}
	e.observer.Store(&f)
}
