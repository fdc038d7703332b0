package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"agentjail/daemon"
)

// cmdDrain is `agentjail drain [--socket PATH] [--wait DURATION]`: it
// makes the daemon on the socket drain (POST /v1/drain: health 503, new
// work refused, work in flight goes on), then, with --wait, waits until
// nothing runs or waits, or the duration is over. For a Kubernetes
// preStop hook: the SIGTERM that follows finds the node idle.
// Exit 0 drained (and idle), 1 still busy when --wait ran out, 125 the
// daemon could not be asked, 2 usage.
func cmdDrain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agentjail drain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sock := fs.String("socket", cmp.Or(os.Getenv("AGENTJAIL_SOCKET"), daemon.DefaultConfig().Socket.Path), "the daemon's socket (default $AGENTJAIL_SOCKET, else the default path)")
	wait := fs.Duration("wait", 0, "then wait until nothing runs or waits, at most this long (e.g. 60s)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agentjail drain: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	ctx := context.Background()
	status, b, err := remoteDo(ctx, *sock, http.MethodPost, "/v1/drain", nil)
	if err == nil && status != http.StatusOK {
		err = remoteFailure("drain", status, b)
	}
	if err != nil {
		fmt.Fprintf(stderr, "agentjail drain: %v\n", err)
		return exitSetup
	}
	deadline := time.Now().Add(*wait)
	for {
		var st struct{ Running, Queued int }
		if err := json.Unmarshal(b, &st); err != nil {
			fmt.Fprintf(stderr, "agentjail drain: bad answer: %v\n", err)
			return exitSetup
		}
		if st.Running+st.Queued == 0 {
			fmt.Fprintln(stdout, "agentjail: draining; nothing runs")
			return 0
		}
		if *wait <= 0 || time.Now().After(deadline) {
			fmt.Fprintf(stdout, "agentjail: draining; %d running, %d queued\n", st.Running, st.Queued)
			if *wait <= 0 {
				return 0
			}
			return 1
		}
		time.Sleep(200 * time.Millisecond)
		if _, b, err = remoteDo(ctx, *sock, http.MethodGet, "/v1/capacity", nil); err != nil {
			fmt.Fprintf(stderr, "agentjail drain: %v\n", err)
			return exitSetup
		}
	}
}
