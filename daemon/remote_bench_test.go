package daemon

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkRemotePass: a warm run of "pass" through the Unix socket and
// through TLS (token check included), each with a kept-alive client.
// `go test ./daemon -run '^$' -bench RemotePass -benchtime 200x`.
// The fake sub-benchmarks answer without a jail: the transport alone.
func BenchmarkRemotePass(b *testing.B) {
	for _, jail := range []string{"real", "fake"} {
		b.Run(jail, func(b *testing.B) {
			var j Jailer = fakeOK()
			if jail == "real" {
				j = realRunner(b)
			}
			e := startRemote(b, testOptions(), j, nil)
			body := `{"code":"pass","start":"warm"}`
			run := func(b *testing.B, c *http.Client, url, token string) {
				for b.Loop() {
					req, _ := http.NewRequest("POST", url+"/v1/run", strings.NewReader(body))
					if token != "" {
						req.Header.Set("Authorization", "Bearer "+token)
					}
					resp, err := c.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Fatal(resp.Status)
					}
				}
			}
			b.Run("socket", func(b *testing.B) { run(b, e.sock, "http://agentjail", "") })
			b.Run("tls", func(b *testing.B) { run(b, e.client, e.base, tokenA) })
			// Interleaved, so that both see the same load: medians.
			b.Run("interleaved", func(b *testing.B) {
				var ds, dt []time.Duration
				for b.Loop() {
					t0 := time.Now()
					once(b, e.sock, "http://agentjail", "", body)
					t1 := time.Now()
					once(b, e.client, e.base, tokenA, body)
					ds, dt = append(ds, t1.Sub(t0)), append(dt, time.Since(t1))
				}
				slices.Sort(ds)
				slices.Sort(dt)
				ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
				b.ReportMetric(ms(ds[len(ds)/2]), "socket-median-ms")
				b.ReportMetric(ms(dt[len(dt)/2]), "tls-median-ms")
				b.ReportMetric(ms(dt[len(dt)/2]-ds[len(ds)/2]), "tls-added-ms")
			})
		})
	}
}

func once(b *testing.B, c *http.Client, url, token, body string) {
	req, _ := http.NewRequest("POST", url+"/v1/run", strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatal(resp.Status)
	}
}
