package harness

import (
	"fmt"

	"agentjail/nsjail"
)

// A Call is what the feedback of a session's call is made of.
type Call struct {
	Result    *nsjail.Result
	Exception *Exception   // the uncaught exception, as the result has it
	Tests     *TestsResult // the tests' verdicts, as the result has them
	Spec      *Tests       // the tests asked for
	Env       *Installed   // the environment's packages, when known
	Before    int          // the session's calls before this one
	// Interrupted: an interrupt of agentjail's (a limit of the call) ended
	// it, at Line when known.
	Interrupted bool
	Line        int
	Caught      string           // CaughtInterrupt's sentence, or ""
	Ended       nsjail.EndReason // the session ended during the call ("" when it lives)
}

// CallFeedback is the feedback of a call of a session, all of it: the
// program's (ProgramFeedback, without the hint that runs share no state),
// what a session keeps (a NameError), the limit that interrupted the call,
// what the jail saw, and what ended the session.
func CallFeedback(c Call) []string {
	fb := programFeedback(c.Exception, c.Tests, c.Spec, c.Env, true)
	jr := c.Result
	if c.Exception != nil && c.Exception.Type == "NameError" {
		fb = append(fb, fmt.Sprintf("In a session, names last from one call to the next: this one was not defined by any of this session's %d earlier calls (or the call that defined it failed before it); define it, or run that code again, first.", c.Before))
	}
	rest := *jr // what else the jail saw past the interrupt: forbidden calls, refused forks
	rest.Status, rest.KillReason = nsjail.StatusError, nsjail.KillNone
	switch {
	case c.Caught != "":
		fb = append(fb, c.Caught)
		fb = append(fb, JailFeedback(&rest)...)
	case c.Interrupted:
		at := ""
		if c.Line > 0 {
			at = fmt.Sprintf(" at line %d", c.Line)
		}
		fb = append(fb, fmt.Sprintf("The call was interrupted%s (KeyboardInterrupt) %s; the session lives on, with what the call did before.", at, interruptedWhy(jr)))
		fb = append(fb, JailFeedback(&rest)...)
	default:
		fb = append(fb, JailFeedback(jr)...)
	}
	if c.Ended != "" {
		fb = append(fb, fmt.Sprintf("The session has ended (%s): %s; its variables, imports and files are gone: start a new session (POST /v1/sessions) to go on.", c.Ended, EndedWhy(c.Ended)))
	}
	return fb
}

// interruptedWhy says which limit of a call interrupted it.
func interruptedWhy(jr *nsjail.Result) string {
	switch jr.KillReason {
	case nsjail.KillWallTimeout:
		return fmt.Sprintf("after %s of wall-clock time, its limit (wall_time_ms)", Duration(jr.WallTime))
	case nsjail.KillCPUTimeout:
		return fmt.Sprintf("after %s of CPU time, past its limit (cpu_time_ms)", Duration(jr.CPUTime))
	case nsjail.KillOutputLimit:
		return "when it printed more than its output limit (output_bytes)"
	}
	return "because its caller went away"
}

// endedWhy says in words why a session ended, for each of
// nsjail.EndReasons (TestEveryEndReasonIsExplained).
var endedWhy = map[nsjail.EndReason]string{
	nsjail.EndExited:      "its interpreter exited (sys.exit() or os._exit() in a call ends the session)",
	nsjail.EndDeleted:     "it was deleted",
	nsjail.EndIdle:        "no call came within its idle timeout",
	nsjail.EndLifetime:    "it reached this daemon's maximum lifetime (sessions.max_lifetime)",
	nsjail.EndShutdown:    "the daemon was stopping",
	nsjail.EndMemory:      "it used more than its memory limit",
	nsjail.EndCPU:         "it used up its CPU time (its budget, or a call that did not stop within 1 s of its interrupt)",
	nsjail.EndWall:        "a call did not stop within 1 s of its interrupt",
	nsjail.EndOutput:      "a call did not stop within 1 s of its interrupt",
	nsjail.EndCancelled:   "a call did not stop within 1 s of its interrupt",
	nsjail.EndSeccomp:     "a forbidden system call ended it",
	nsjail.EndFileSize:    "its interpreter wrote a file past its file size limit (file_size_bytes) and died of it (SIGXFSZ)",
	nsjail.EndControlLost: "its interpreter closed agentjail's control channel (fd 3)",
	nsjail.EndProtocol:    "its interpreter sent on agentjail's control channel (fd 3) what the protocol does not allow",
	nsjail.EndRuntime:     "its warm runtime (the environment's zygote) died or stalled, not by the program's doing; a new zygote is being started",
}

// EndedWhy says in words why a session ended.
func EndedWhy(r nsjail.EndReason) string {
	if why, ok := endedWhy[r]; ok {
		return why
	}
	return "its interpreter ended"
}

// CaughtInterrupt is the feedback of a call that a limit of its own
// interrupted (its wall time, CPU time or output) and that did not die of
// the interrupt: nsjail marks it killed for that limit, with no signal,
// since the daemon's evidence is that the limit fired during the call.
// Its code caught the KeyboardInterrupt and went on (caught: session.py's
// word), or handles SIGINT itself, or had just run to its end when the
// interrupt came. "" for any other call.
func CaughtInterrupt(jr *nsjail.Result, ended nsjail.EndReason, caught bool, limits nsjail.CallLimits) string {
	if jr.Status != nsjail.StatusKilled || jr.Signal != 0 || ended != "" {
		return ""
	}
	var limit string
	switch jr.KillReason {
	case nsjail.KillWallTimeout:
		limit = fmt.Sprintf("its wall-clock limit of %s (wall_time_ms) fired", Duration(limits.WallTime))
	case nsjail.KillCPUTimeout:
		limit = fmt.Sprintf("it passed its CPU time limit of %s (cpu_time_ms)", Duration(limits.CPUTime))
	case nsjail.KillOutputLimit:
		limit = fmt.Sprintf("it printed more than its output limit of %s (output_bytes)", Bytes(limits.OutputBytes))
	default:
		return ""
	}
	if !caught {
		return fmt.Sprintf("The call was interrupted when %s, but did not stop there (the interrupt came as its code ended, or the code handles SIGINT itself): "+
			"it ended by itself after %s of wall-clock time, and its output and value are what it did by then; ask for a larger limit if the call needs it.",
			limit, Duration(jr.WallTime))
	}
	return fmt.Sprintf("The call was interrupted (KeyboardInterrupt) when %s, but its code caught the interrupt and went on, ending after %s of wall-clock time: "+
		"its output and value are what it did by then. Do not catch KeyboardInterrupt (a bare `except:` or `except BaseException:` does; use `except Exception:`), "+
		"and ask for a larger limit if the call needs it; a call still running %s after its interrupt ends the session.",
		limit, Duration(jr.WallTime), Duration(nsjail.InterruptGrace))
}
