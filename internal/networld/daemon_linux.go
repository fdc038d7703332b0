package networld

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"agentjail/internal/systest"
)

// Daemon is `agentjail serve` running in the world's namespace D.
type Daemon struct {
	Sock string // its Unix socket (in no network namespace)
	Pid  int
	cmd  *exec.Cmd
	log  *systest.Buffer
	done chan error
}

// MetricsPort is the daemon's [metrics] listener's port on DAddr4 in
// DaemonConfig.
const MetricsPort = "9464"

// DaemonConfig is a configuration for a daemon in the world: peers uid 0,
// jails' uids from uidBase, the world's DNS server as the proxy's
// resolver, the metrics listener on D's address; extra is appended (its
// own [network.policies.NAME] tables, limits).
func DaemonConfig(uidBase uint32, network, extra string) string {
	return DaemonConfigOn(MetricsPort, uidBase, "", network, extra)
}

// DaemonConfigOn is DaemonConfig with the metrics listener on another
// port (a second daemon in the same world) and more keys of [jail].
func DaemonConfigOn(metricsPort string, uidBase uint32, jail, network, extra string) string {
	return fmt.Sprintf(`[peers]
uids = [0]
[jail]
uid_base = %d
uid_count = 100000
%s
[metrics]
listen = "%s:%s"
[network]
resolver = "%s:53"
%s
%s`, uidBase, jail, DAddr4, metricsPort, DNSAddr, network, extra)
}

// StartDaemon runs bin serve in D with config (written to dir), and
// waits until it answers on its socket. The daemon is entered into D by
// nsenter, which execs it: its pid is nsenter's.
func (w *World) StartDaemon(bin, dir, config string) (*Daemon, error) {
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		return nil, err
	}
	d := &Daemon{Sock: filepath.Join(dir, "agentjail.sock"), log: &systest.Buffer{}, done: make(chan error, 1)}
	d.cmd = exec.Command("nsenter", "--net=/run/netns/"+w.D, "--", bin, "serve", "--config", cfg, "--socket", d.Sock)
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	d.Pid = d.cmd.Process.Pid
	go func() { d.done <- d.cmd.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := d.Client().Get("http://agentjail/v1/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return d, nil
			}
		}
		select {
		case err := <-d.done:
			d.done <- err
			return nil, fmt.Errorf("the daemon exited at start-up: %v\n%s", err, d.log.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	_ = d.Stop()
	return nil, fmt.Errorf("the daemon did not answer within 20 s\n%s", d.log.String())
}

// Log is what the daemon wrote so far.
func (d *Daemon) Log() string { return d.log.String() }

// Alive says whether the daemon's process is still running.
func (d *Daemon) Alive() bool {
	select {
	case err := <-d.done:
		d.done <- err
		return false
	default:
		return true
	}
}

// Stop ends the daemon (SIGTERM, then SIGKILL after 15 s) and waits.
func (d *Daemon) Stop() error {
	if !d.Alive() {
		return nil
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(15 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
		return errors.New("the daemon did not end within 15 s of SIGTERM: killed")
	}
	return nil
}

// Client is an HTTP client of the daemon's socket. It keeps no idle
// connection: the daemon's fds then count only what the daemon holds on
// its own.
func (d *Daemon) Client() *http.Client {
	return &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", d.Sock)
		},
	}}
}

// Call sends a JSON request to the daemon and decodes the answer into
// out (when not nil); it returns the HTTP status.
func (d *Daemon) Call(method, path string, body, out any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://agentjail"+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.Client().Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, b, err
	}
	if out != nil && len(bytes.TrimSpace(b)) > 0 && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, b, fmt.Errorf("decoding %s %s's answer: %w: %s", method, path, err, b)
		}
	}
	return resp.StatusCode, b, nil
}

// FdCount is the number of the daemon's open fds (-1 when unknown).
func (d *Daemon) FdCount() int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", d.Pid))
	if err != nil {
		return -1
	}
	return len(ents)
}

// Fds maps each of the daemon's open fds to what it is ("socket:[INODE]",
// "pipe:[INODE]", a path).
func (d *Daemon) Fds() map[string]string {
	out := map[string]string{}
	dir := fmt.Sprintf("/proc/%d/fd", d.Pid)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		t, _ := os.Readlink(filepath.Join(dir, e.Name()))
		out[e.Name()] = t
	}
	return out
}

// Sockets lists the daemon's socket fds' targets ("socket:[INODE]").
func (d *Daemon) Sockets() []string {
	var out []string
	dir := fmt.Sprintf("/proc/%d/fd", d.Pid)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if t, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(t, "socket:") {
			out = append(out, t)
		}
	}
	return out
}
