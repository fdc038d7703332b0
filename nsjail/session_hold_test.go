package nsjail

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hoardCall keeps what a call's stdin brought, every way a session's code
// can: a dup of fd 0 and a shared mapping of it (the fd then closed). The
// bytes this process wrote for the call must not stay reachable from the
// session after the call (they are charged to this process's cgroup,
// never to the session's): the attack of docs/security.md, "What a
// session can hold".
const hoardCall = `
import mmap, os
keep = globals().setdefault("keep", [])
maps = globals().setdefault("maps", [])
keep.append(os.dup(0))
try:
    maps.append(mmap.mmap(os.dup(0), 0, mmap.MAP_SHARED, mmap.PROT_READ))
except (OSError, ValueError):
    pass
`

// heldCall counts the bytes the kept fds and mappings still give.
const heldCall = `
import os
total = sum(len(m) for m in maps)
for fd in keep:
    os.set_blocking(fd, False)
    while True:
        try:
            b = os.read(fd, 1 << 16)
        except (BlockingIOError, OSError):
            break
        if not b:
            break
        total += len(b)
print(total)
`

func TestSessionCannotHoardWhatCallsBring(t *testing.T) {
	s := startSession(t, nil)
	const calls, size = 4, 4 << 20
	stdin := []byte(strings.Repeat("x", size))
	for range calls {
		r := sessionCall(t, s, hoardCall, func(c *CallSpec) { c.Stdin = stdin })
		require.Equal(t, StatusOK, r.Status, "%s", r.Stderr)
	}
	r := sessionCall(t, s, heldCall, nil)
	require.Equal(t, StatusOK, r.Status, "%s", r.Stderr)
	held, err := strconv.Atoi(strings.TrimSpace(string(r.Stdout)))
	require.NoError(t, err, "%q", r.Stdout)
	// Before feeds: every call's memfd, twice (the fd and the mapping).
	assert.Zero(t, held, "bytes of earlier calls' stdin the session still holds, charged to the daemon")
}
