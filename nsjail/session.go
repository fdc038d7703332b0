package nsjail

import (
	"errors"
	"time"
)

// EndReason says why a session ended (Session.Ended). Each rests on the
// same kind of evidence as a run's KillReason: a decision this process
// recorded (the caller's End, a call's interrupt left unanswered), or
// the kernel's (the OOM counter, the group's CPU time, the program's own
// exit).
type EndReason string

const (
	EndExited      EndReason = "exited"          // the session's interpreter ended by itself: sys.exit(), os._exit(), a crash (the call's status and signal say which)
	EndDeleted     EndReason = "deleted"         // its owner ended it (End)
	EndIdle        EndReason = "idle_timeout"    // no call for its idle timeout (End, by the daemon)
	EndLifetime    EndReason = "max_lifetime"    // it reached the daemon's maximum lifetime (End)
	EndShutdown    EndReason = "shutdown"        // the daemon was stopping (End)
	EndMemory      EndReason = "memory_limit"    // the cgroup's OOM-kill counter rose
	EndCPU         EndReason = "cpu_timeout"     // the session's CPU budget; or a call's CPU limit whose interrupt it ignored past InterruptGrace
	EndWall        EndReason = "wall_timeout"    // a call's wall time, whose interrupt it ignored past InterruptGrace
	EndOutput      EndReason = "output_limit"    // a call's output limit, whose interrupt it ignored past InterruptGrace
	EndCancelled   EndReason = "cancelled"       // a call's caller went away, and the call ignored its interrupt past InterruptGrace
	EndSeccomp     EndReason = "seccomp"         // a forbidden system call ended it (as KillSeccomp a run)
	EndFileSize    EndReason = "file_size_limit" // its interpreter died of SIGXFSZ
	EndControlLost EndReason = "control_lost"    // its interpreter closed or broke agentjail's control channel (its fd 3): no call can reach it
)

// EndProtocol: its interpreter sent on agentjail's control channel (its
// fd 3) what the protocol does not allow: during a call, anything but that
// call's one end record (sessionrecords_linux.go).
const EndProtocol EndReason = "protocol_violation"

// EndRuntime: a warm session's zygote died or stalled (ErrZygoteFailed).
const EndRuntime EndReason = "runtime_failed"

// KillControlLost is the kill reason of a call whose session lost its
// control channel during the call (EndControlLost): the session was
// killed because no call could reach it any more.
const KillControlLost KillReason = "control_lost"

// endReasons is every EndReason, with the kill reason a call running
// when its session ends that way gets (TestEveryEndReasonIsInTheTable
// finds each EndReason constant of the package here).
var endReasons = []struct {
	end  EndReason
	kill KillReason
}{
	{EndExited, KillReason(EndExited)},
	{EndDeleted, KillCancelled}, // its owner (or the daemon for it) ended it
	{EndIdle, KillCancelled},
	{EndLifetime, KillCancelled},
	{EndShutdown, KillShutdown},
	{EndMemory, KillMemoryLimit},
	{EndCPU, KillCPUTimeout}, // the call's own limits, and its caller gone
	{EndWall, KillWallTimeout},
	{EndOutput, KillOutputLimit},
	{EndCancelled, KillCancelled},
	{EndSeccomp, KillSeccomp},
	{EndFileSize, KillFileSizeLimit},
	{EndControlLost, KillControlLost},
	{EndProtocol, KillControlLost},
	{EndRuntime, KillReason(EndRuntime)},
}

// EndReasons are all the reasons a session ends for, in the table's
// order.
func EndReasons() []EndReason {
	out := make([]EndReason, len(endReasons))
	for i, r := range endReasons {
		out[i] = r.end
	}
	return out
}

// killFor is the kill reason a call running when its session ends this
// way gets.
func killFor(r EndReason) KillReason {
	for _, e := range endReasons {
		if e.end == r {
			return e.kill
		}
	}
	return KillReason(r)
}

// InterruptGrace is how long a session's call has to end after its
// interrupt (SIGINT: a KeyboardInterrupt in the call) before the whole
// session is killed.
const InterruptGrace = time.Second

// CallLimits bound one call of a session. The session's own limits
// (memory, pids, scratch size, open files, file size, and its CPU
// budget) hold across its calls.
type CallLimits struct {
	WallTime    time.Duration // from the sending of the call to its end
	CPUTime     time.Duration // the CPU time the session's group uses during the call
	OutputBytes int64         // stdout and stderr of the call together
	// DisplayBytes bounds the call's display entries (the daemon's, which
	// the session does not read; Validate leaves it alone).
	DisplayBytes int64
}

// Validate checks that every limit is usable; errors name the request's
// field (limits.wall_time_ms, ...).
func (l CallLimits) Validate() error {
	switch {
	case l.WallTime < time.Millisecond:
		return fieldErr("limits.wall_time_ms", "must be at least 1 ms, got %v", l.WallTime)
	case l.CPUTime < time.Millisecond:
		return fieldErr("limits.cpu_time_ms", "must be at least 1 ms, got %v", l.CPUTime)
	case l.OutputBytes < 1:
		return fieldErr("limits.output_bytes", "must be at least 1, got %d", l.OutputBytes)
	}
	return nil
}

// CallSpec is one call of a session: plain data.
type CallSpec struct {
	ID string // the call's result ID; Call assigns one ("j-…") when empty
	// Payload is what the session's program reads for the call, from a
	// feed (feed_linux.go): its own format (the daemon's: harness.CallPayload).
	Payload       []byte
	Stdin         []byte // a feed as well; nil: /dev/null
	Limits        CallLimits
	Collect       []string // as Spec.Collect, read after the call
	CollectLimits CollectLimits
}

// CallResult is what one call did. Result has the call's own figures:
// its output and report channel, its wall time, its share of the
// group's CPU time, OOM kills and refused forks, its peak memory where the
// kernel can reset the mark (PeakMemorySource says), and how it ended:
// StatusOK or StatusError as the program reported it, StatusKilled with
// the kill reason and SIGINT when agentjail interrupted it and it
// stopped, or the session's own end when the session ended during the
// call. PidsPeak is -1: pids.peak cannot be reset for a call.
type CallResult struct {
	*Result
	// End is the program's record of the call's end, for the caller to
	// read its own fields from (the value of a trailing expression); nil
	// when the call did not end by itself (its session ended during it).
	End []byte
	// Ended is why the session ended, "" while it lives on.
	Ended EndReason
}

// SessionStats are a session's figures from its cgroup.
type SessionStats struct {
	MemoryBytes     int64         // in use now (0 once it ended); -1 when the kernel cannot tell
	PeakMemoryBytes int64         // the most since it started; -1 when the kernel cannot tell
	CPUTime         time.Duration // user and system time since it started, of every process
}

// ErrSessionBusy refuses a call while another call of the session runs:
// one call at a time, none waits.
var ErrSessionBusy = errors.New("the session is running a call; one call at a time")

// SessionEndedError refuses a call to a session that has ended.
type SessionEndedError struct{ Reason EndReason }

func (e *SessionEndedError) Error() string {
	return "the session has ended (" + string(e.Reason) + ")"
}
