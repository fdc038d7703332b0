package nsjail

import (
	"os"
	"strconv"
	"time"
)

// A jail's flow: how its pid 1 is started and waited for, and how its
// program comes to be. Two flows, as runc has initProcess and
// setnsProcess behind parentProcess:
//
//	coldFlow  a cold jail (also a prepared one, and a zygote's own): its
//	          pid 1 is this process's child, and execs the program
//	warmFlow  a warm run (warm_run_linux.go): its pid 1 is an orphan in
//	          its zygote's pid namespace, held by a pidfd, and adopts the
//	          program that the zygote forks into the jail
//
// The jail (jail_linux.go) is what both share: the sync socket, the
// cgroup, the mount namespace, the kill reason, the clean-up. It calls its
// flow at each step where the two differ, never by testing which it has.
// A flow is three small parts, one per stage of the jail's life:
// initProcess (start), programPath (deliver) and runGuard (supervise).
type jailFlow interface {
	initProcess
	programPath
	runGuard
}

// initProcess is how the jail's pid 1 is started, held and waited for
// (jail.start, jail.wait, jail.cleanup).
type initProcess interface {
	// bootstrapArgs adds the flow's environment and fds (after fd 4) to
	// the bootstrap's; syncFd is this process's end of the sync socket.
	bootstrapArgs(j *jail, syncFd int, null *os.File, env []string, extra []*os.File) ([]string, []*os.File, error)
	// bootstrap reads the started bootstrap's report: the jail's pid 1.
	bootstrap(j *jail, boot *os.Process) (*os.Process, error)
	// threadBound tells whether the jail dies with the OS thread that
	// started it, which must then stay locked until it has been waited
	// for (jail.threadBound).
	threadBound() bool
	// wait waits for pid 1's end; once it has (nil), again is nothing.
	wait(j *jail) error
	// initState is pid 1's own end, when it is known and says something
	// of the program (a cold jail's, once waited for); nil else.
	initState() *os.ProcessState
	// awaitKilled waits, at most timeout and on this thread, for pid 1's
	// end after a kill.
	awaitKilled(j *jail, timeout time.Duration)
}

// programPath is how the program comes to be in the built jail and how
// its messages reach this process (jail.awaitBuild, jail.deliver,
// jail.receive).
type programPath interface {
	// nsFds is how many namespaces come after the mount namespace with
	// the build's msgReady; gotNS takes them.
	nsFds() int
	gotNS(fds []int)
	// prepareAhead is the flow's part of a jail prepared ahead of its
	// request, once it is built (preparedPool.keep).
	prepareAhead(j *jail) error
	// requestPlan is what msgRequest carries to pid 1: its plan and fds.
	requestPlan(j *jail, cfg *requestConfig, stdio []int) ([]byte, []int, error)
	// afterRequest runs once pid 1 has its request, with the cgroup made.
	afterRequest(j *jail, cfg *requestConfig, stdio []int) error
	// afterGo runs once pid 1 has its go, with the cgroup's tasks files
	// (v1; nil on v2), which it closes.
	afterGo(j *jail, join []int) error
	// peer is the socket the run's next messages come on.
	peer(j *jail) *os.File
	// execStarted runs when msgSeccomp has come: the program exists.
	execStarted(j *jail)
}

// runGuard is what, beyond the run's own limits, may fail a jail's work
// (a warm run's zygote), and what the flow holds until the end
// (supervise, a session's life, the prepared pool).
type runGuard interface {
	// watch starts watching what else may fail the run, until done is
	// closed; failure is what did, once pid 1 has ended (ok: it sent
	// msgExit), and failed what failure found so far.
	watch(j *jail, done <-chan struct{})
	failure(j *jail, ok bool) error
	failed() error
	// retiring tells whether what the jail was made from (a warm run's
	// zygote) makes no more: a prepared jail of it is not to be taken.
	retiring() bool
	// release gives back what the flow holds, once pid 1 is gone.
	release(j *jail)
}

// coldFlow is a cold jail's: its pid 1 is this process's child.
type coldFlow struct {
	// idMap, when set before start, is the uid and gid map this process
	// writes for the jail (a zygote's, of its own uid and its runs'); by
	// default the jail maps its own uid itself.
	idMap string
	state *os.ProcessState // pid 1's end, once waited for
}

func (f *coldFlow) bootstrapArgs(_ *jail, _ int, _ *os.File, env []string, extra []*os.File) ([]string, []*os.File, error) {
	if f.idMap != "" {
		env = append(env, zygoteEnv+"=1")
	}
	return env, extra, nil
}

func (f *coldFlow) bootstrap(j *jail, boot *os.Process) (*os.Process, error) {
	return bootstrap(j.sync, boot, f.idMap)
}

// threadBound: pid 1 is the starting thread's child, with a parent-death
// signal tied to that thread.
func (f *coldFlow) threadBound() bool { return true }
func (f *coldFlow) nsFds() int        { return 0 }
func (f *coldFlow) gotNS([]int)       {}

func (f *coldFlow) prepareAhead(*jail) error { return nil }

func (f *coldFlow) requestPlan(j *jail, cfg *requestConfig, stdio []int) ([]byte, []int, error) {
	return requestPlan(cfg, j.tmpBytes), stdio, nil
}

func (f *coldFlow) afterRequest(*jail, *requestConfig, []int) error { return nil }

func (f *coldFlow) afterGo(_ *jail, join []int) error {
	closeFds(join)
	return nil
}

func (f *coldFlow) peer(j *jail) *os.File { return j.sync }
func (f *coldFlow) execStarted(*jail)     {}

func (f *coldFlow) wait(j *jail) error {
	if f.state != nil {
		return nil
	}
	awaitExit(j.proc.Pid)
	st, err := j.proc.Wait()
	if err != nil {
		return err
	}
	f.state = st
	return nil
}

// initState: pid 1's own end, which a kill of the whole jail ended,
// or which explains a broken conversation; nil until it has been waited
// for (or when its wait failed).
func (f *coldFlow) initState() *os.ProcessState { return f.state }

func (f *coldFlow) awaitKilled(j *jail, timeout time.Duration) {
	awaitExitFor(j.proc.Pid, timeout)
}

func (f *coldFlow) watch(*jail, <-chan struct{}) {}
func (f *coldFlow) failure(*jail, bool) error    { return nil }
func (f *coldFlow) failed() error                { return nil }
func (f *coldFlow) retiring() bool               { return false }
func (f *coldFlow) release(*jail)                {}

// bootstrapEnv is the bootstrap's environment, before the flow's part:
// nothing but the jail's host uid.
func (j *jail) bootstrapEnv() []string {
	return []string{uidEnv + "=" + strconv.FormatUint(uint64(j.uid), 10)}
}
