package networld

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// Echo is what the echo server answers: the request it saw.
type Echo struct {
	Server string `json:"server"` // "echo"
	Host   string `json:"host"`   // the Host header
	Method string `json:"method"`
	Path   string `json:"path"`
	TLS    bool   `json:"tls"`
	SNI    string `json:"sni"`
}

// echoHandler reports the request it saw as JSON; /bytes?n=N sends N
// bytes instead (the large download of the benchmark and the byte cap);
// /sink reads the whole request body and says how long it was.
func echoHandler() http.Handler {
	zeros := make([]byte, 256<<10)
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bytes" {
			n, err := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
			if err != nil || n < 0 {
				http.Error(rw, "n: a byte count", http.StatusBadRequest)
				return
			}
			rw.Header().Set("Content-Length", strconv.FormatInt(n, 10))
			rw.Header().Set("Content-Type", "application/octet-stream")
			for n > 0 {
				k := min(n, int64(len(zeros)))
				if _, err := rw.Write(zeros[:k]); err != nil {
					return
				}
				n -= k
			}
			return
		}
		if r.URL.Path == "/sink" {
			n, _ := io.Copy(io.Discard, r.Body)
			fmt.Fprintf(rw, "%d\n", n)
			return
		}
		e := Echo{Server: "echo", Host: r.Host, Method: r.Method, Path: r.URL.RequestURI(), TLS: r.TLS != nil}
		if r.TLS != nil {
			e.SNI = r.TLS.ServerName
		}
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(e)
	})
}

// secretHandler answers every request with body: the "metadata" and
// "private" servers, whose body in a jail's output would prove a leak.
func secretHandler(body string) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(rw, body)
	})
}
