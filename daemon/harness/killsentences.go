package harness

import (
	"fmt"

	"agentjail/nsjail"
)

// killSentences: for each of nsjail.KillReasons, the sentence of
// JailFeedback that says what the kill means and what to do (nil: none,
// and why). TestEveryKillReasonHasASentence fails for a kill reason
// missing here.
var killSentences = map[nsjail.KillReason]func(*nsjail.Result) string{
	nsjail.KillMemoryLimit: func(r *nsjail.Result) string {
		return fmt.Sprintf("The program was killed because it used more than its memory limit of %s (peak %s); use less memory, e.g. process data in chunks or use generators.", Bytes(r.MemoryLimitBytes), peak(r))
	},
	nsjail.KillWallTimeout: func(r *nsjail.Result) string {
		return fmt.Sprintf("The program was killed after running for %s of wall-clock time, its limit; look for an infinite loop, a blocking read or a long sleep.", Duration(r.WallTime))
	},
	nsjail.KillCPUTimeout: func(r *nsjail.Result) string {
		return fmt.Sprintf("The program was killed after using %s of CPU time, past its limit; make the algorithm faster or look for an infinite loop.", Duration(r.CPUTime))
	},
	nsjail.KillOutputLimit: func(*nsjail.Result) string {
		return "The program was killed because it printed more than its output limit; print less (e.g. a summary instead of every item)."
	},
	nsjail.KillFileSizeLimit: func(*nsjail.Result) string {
		return "The program was killed because it wrote a file larger than the file size limit."
	},
	nsjail.KillSeccomp: func(r *nsjail.Result) string { return seccompKill(r.Seccomp) },
	nsjail.KillCancelled: func(*nsjail.Result) string {
		return "The run was cancelled by the caller."
	},
	nsjail.KillShutdown: func(*nsjail.Result) string {
		return "The run was stopped because the sandbox service was shutting down; run it again."
	},
	// Only a session's call: the sentence of the session's end
	// (EndedWhy, EndControlLost or EndProtocol) says why.
	nsjail.KillControlLost: nil,
}
