// Command egressworld starts the egress tests' own network
// (internal/networld) and `agentjail serve` in its namespace D, for the
// benchmarks (scripts/bench --egress). It prints one JSON line (the
// daemon's socket and pid, the namespaces, the world's addresses), then
// keeps everything up until its stdin closes or it gets SIGTERM or
// SIGINT, and removes it all. As root:
//
//	go build -o /tmp/egressworld ./internal/networld/egressworld
//	/tmp/egressworld --bin bin/agentjail --network 'max_bytes = 1073741824'
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"agentjail/internal/networld"
)

func main() {
	bin := flag.String("bin", "bin/agentjail", "the agentjail binary to serve")
	network := flag.String("network", "", "more keys of [network] (TOML lines)")
	extra := flag.String("config", "", "more configuration (TOML, after [network])")
	flag.Parse()
	if err := run(*bin, *network, *extra); err != nil {
		fmt.Fprintln(os.Stderr, "egressworld:", err)
		os.Exit(1)
	}
}

func run(bin, network, extra string) error {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "egressworld-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	w, err := networld.Start(dir)
	if err != nil {
		return err
	}
	defer w.Close()
	d, err := w.StartDaemon(abs, dir, networld.DaemonConfig(networld.UIDBase(), network, extra))
	if err != nil {
		return err
	}
	defer d.Stop()
	info := map[string]any{
		"socket": d.Sock, "pid": d.Pid, "d": w.D, "u": w.U, "ca": w.CAFile,
		"echo": networld.EchoAddr, "echo_name": networld.EchoName, "index": networld.IndexName,
	}
	b, _ := json.Marshal(info)
	fmt.Println(string(b))
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); done <- struct{}{} }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-done:
	case <-sig:
	}
	return nil
}
