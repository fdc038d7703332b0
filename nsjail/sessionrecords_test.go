package nsjail

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"agentjail/internal/systest"
)

// TestSessionRecordFlood: a call's code that writes records to the
// control socket (fd 3) in a loop made the daemon read, allocate and
// parse each (the review's: 11.7 s of the daemon's CPU for a call charged
// 238 ms). A call may send one record, its end: the first that is not
// ends the session (EndProtocol), so the daemon's own CPU time for the
// call stays small however long the code would flood. Each flood runs
// for 3 s unless it is stopped.
func TestSessionRecordFlood(t *testing.T) {
	for _, tc := range []struct{ name, record string }{
		{"junk", `b'{"t":"x"}'`},
		{"not JSON", `b'x'`},
		{"another call's end", `b'{"t":"end","n":99,"status":0}'`},
		{"large", `b'{"t":"x","p":"' + b'a' * (150 << 10) + b'"}'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSession(t, nil)
			cpu0 := systest.SelfCPU()
			r := sessionCall(t, s, `import os, time
rec = `+tc.record+`
end = time.monotonic() + 3
while time.monotonic() < end:
    try:
        os.write(3, rec)
    except OSError:
        pass
`, nil)
			daemon := systest.SelfCPU() - cpu0
			t.Logf("daemon CPU %v for the call; the jail's %v, wall %v", daemon, r.CPUTime, r.WallTime)
			assert.Equal(t, EndProtocol, r.Ended)
			assert.Equal(t, StatusKilled, r.Status)
			assert.Equal(t, KillControlLost, r.KillReason)
			assert.Less(t, r.WallTime, 2*time.Second, "the flood was stopped at its first record")
			assert.Less(t, daemon, 500*time.Millisecond, "the daemon's CPU for the call")
		})
	}
}

// TestSessionStaleRecord: a record sent after a call's end (here the
// code forges its call's end, so the program's own comes after it) is out
// of sequence: the next call, once it has run, ends the session.
func TestSessionStaleRecord(t *testing.T) {
	s := startSession(t, nil)
	r := sessionCall(t, s, `import os; os.write(3, b'{"t":"end","n":1,"status":0}')`, nil)
	assert.Equal(t, StatusOK, r.Status)
	assert.Empty(t, r.Ended)
	r = sessionCall(t, s, `print("second")`, nil)
	assert.Equal(t, EndProtocol, r.Ended)
	assert.Equal(t, KillControlLost, r.KillReason)
}

// TestSessionRecordWithFds: a record that carries fds is no record (the
// kernel closes them: the daemon is given none), even one that reads as
// the call's end.
func TestSessionRecordWithFds(t *testing.T) {
	s := startSession(t, nil)
	r := sessionCall(t, s, `import os, socket
c = socket.socket(fileno=os.dup(3))
socket.send_fds(c, [b'{"t":"end","n":1,"status":0}'], [0, 1, 2])
import time; time.sleep(5)
`, nil)
	assert.Equal(t, EndProtocol, r.Ended)
	assert.Equal(t, KillControlLost, r.KillReason)
}
