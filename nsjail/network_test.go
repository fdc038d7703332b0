package nsjail

import (
	"context"
	"net"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/egress"
)

// The Network hook gets the jail's namespace by a handle that cannot
// name another process: a warm run's pid 1 is not the daemon's child, so
// its pid may be reused once it ends; the hook gets the run's pidfd of
// it, on which a listener opens in the jail. A cold jail's pid 1 is the
// daemon's unwaited child: its namespace file is used.
func TestNetworkHookNamesTheJailByPidfd(t *testing.T) {
	r := warmRunner(t, ZygoteSpec{Name: "default", Ahead: 1})
	for _, start := range []StartMode{StartWarm, StartCold} {
		var kind string
		var lerr error
		var l net.Listener
		spec := &Spec{Program: []byte(`import socket
s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
print("connected")`), Limits: DefaultLimits(), Start: start}
		spec.Network = func(ns *os.File) error {
			kind, _ = os.Readlink("/proc/self/fd/" + strconv.Itoa(int(ns.Fd())))
			l, lerr = egress.ListenIn(ns)
			if lerr == nil {
				go func() {
					if c, err := l.Accept(); err == nil {
						c.Close()
					}
				}()
			}
			return lerr
		}
		res, err := r.Run(context.Background(), spec)
		if l != nil {
			l.Close()
		}
		require.NoError(t, err, start)
		require.NoError(t, lerr, start)
		assert.Equal(t, StatusOK, res.Status, "%s: %s", start, res.Stderr)
		assert.Equal(t, "connected\n", string(res.Stdout), start)
		if start == StartWarm {
			assert.Equal(t, "anon_inode:[pidfd]", kind, "a warm run's namespace is named by the run's pidfd")
		} else {
			assert.Regexp(t, `^net:\[`, kind)
		}
	}
}
