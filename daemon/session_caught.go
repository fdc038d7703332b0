package daemon

import (
	"fmt"

	"agentjail/daemon/harness"
	"agentjail/nsjail"
)

// caughtInterrupt is the feedback of a call that a limit of its own
// interrupted (its wall time, CPU time or output) and that did not die of
// the interrupt: nsjail marks it killed for that limit, with no signal,
// since the daemon's evidence is that the limit fired during the call.
// Its code caught the KeyboardInterrupt and went on (caught: session.py's
// word), or handles SIGINT itself, or had just run to its end when the
// interrupt came. "" for any other call.
func caughtInterrupt(jr *nsjail.Result, ended nsjail.EndReason, caught bool, limits nsjail.CallLimits) string {
	if jr.Status != nsjail.StatusKilled || jr.Signal != 0 || ended != "" {
		return ""
	}
	var limit string
	switch jr.KillReason {
	case nsjail.KillWallTimeout:
		limit = fmt.Sprintf("its wall-clock limit of %s (wall_time_ms) fired", harness.Duration(limits.WallTime))
	case nsjail.KillCPUTimeout:
		limit = fmt.Sprintf("it passed its CPU time limit of %s (cpu_time_ms)", harness.Duration(limits.CPUTime))
	case nsjail.KillOutputLimit:
		limit = fmt.Sprintf("it printed more than its output limit of %s (output_bytes)", harness.Bytes(limits.OutputBytes))
	default:
		return ""
	}
	if !caught {
		return fmt.Sprintf("The call was interrupted when %s, but did not stop there (the interrupt came as its code ended, or the code handles SIGINT itself): "+
			"it ended by itself after %s of wall-clock time, and its output and value are what it did by then; ask for a larger limit if the call needs it.",
			limit, harness.Duration(jr.WallTime))
	}
	return fmt.Sprintf("The call was interrupted (KeyboardInterrupt) when %s, but its code caught the interrupt and went on, ending after %s of wall-clock time: "+
		"its output and value are what it did by then. Do not catch KeyboardInterrupt (a bare `except:` or `except BaseException:` does; use `except Exception:`), "+
		"and ask for a larger limit if the call needs it; a call still running %s after its interrupt ends the session.",
		limit, harness.Duration(jr.WallTime), harness.Duration(nsjail.InterruptGrace))
}
