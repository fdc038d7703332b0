package nsjail

import (
	"context"
	"os"
)

// A jail's flow: how its pid 1 is started and how its program comes to
// be. Two flows, as runc has initProcess and setnsProcess behind
// parentProcess:
//
//	coldFlow  a cold jail (also a prepared one, and a zygote's own): its
//	          pid 1 is this process's child, and execs the program
//	warmFlow  a warm run (warm_run_linux.go): its pid 1 is an orphan in
//	          its zygote's pid namespace, held by a pidfd, and adopts the
//	          program that the zygote forks into the jail
//
// Each method is a whole step of the jail's life, written top to bottom
// in the flow's file; it calls the steps both flows share (jail_linux.go,
// deliver_linux.go, handshake_linux.go, supervise_linux.go), which never
// call back. The jail is what both share: the sync socket, the cgroup,
// the mount namespace, the kill reason, the clean-up, and what the start
// sets: how pid 1 is held (pid1) and what else may fail the jail
// (runGuard).
type jailFlow interface {
	// start starts the jail's pid 1 and sends it the build (msgBuild),
	// unanswered yet: the caller may do its own part meanwhile. The
	// caller's OS thread must be locked, until the jail has been waited
	// for if its pid1 is threadBound, else until start has returned.
	start(j *jail, b built) error
	// prepare readies a started jail ahead of its request, once built:
	// its cgroup, with limits l (cgroupAhead), and a warm run's program.
	prepare(j *jail, l Limits) error
	// startProgram gives the started jail its request and starts the
	// program: it returns once the program has its filter, with the
	// program's output and the filter's listener. control, when not nil,
	// is the program's fd 3 (a session's or a zygote's control socket).
	startProgram(j *jail, cfg *requestConfig, control *os.File) (*programIO, int, error)
	// run runs the request spec, cfg in the started jail to its end, and
	// cleans up after it, whatever happened (jail.settle).
	run(ctx context.Context, j *jail, spec *Spec, cfg *requestConfig) (*Result, error)
}

// newJail is a cold jail of r, not started, for host uid uid; a warm
// run's start gives it its own flow (warmRuntime.startRun).
func newJail(r *Runner, uid uint32) *jail {
	return &jail{runner: r, uid: uid, flow: &coldFlow{}, guard: noGuard{}}
}

// coldFlow is a cold jail's flow: its pid 1 is this process's child.
type coldFlow struct {
	// idMap, when set before start, is the uid and gid map this process
	// writes for the jail (a zygote's, of its own uid and its runs'); by
	// default the jail maps its own uid itself.
	idMap string
}

// start: the bootstrap makes the jail's user and pid namespaces and forks
// pid 1 as this process's child (bootstrap), with a parent-death signal
// tied to the starting thread (childInit).
func (f *coldFlow) start(j *jail, b built) error {
	var env []string
	if f.idMap != "" {
		env = append(env, zygoteEnv+"=1")
	}
	boot, err := j.launch(env, nil)
	if err != nil {
		return err
	}
	proc, err := bootstrap(j.sync, boot, f.idMap)
	if err != nil {
		return err
	}
	j.proc, j.pid1 = proc, &childInit{proc: proc}
	return j.sendBuild(b)
}

func (f *coldFlow) prepare(j *jail, l Limits) error {
	if _, err := j.awaitBuild(0); err != nil {
		return err
	}
	return j.cgroupAhead(l)
}

// startProgram: the request goes to pid 1 whole (the program, its files,
// stdio, rlimits, the filter), which execs the program once it has its
// go, and sends msgSeccomp once the filter is on.
func (f *coldFlow) startProgram(j *jail, cfg *requestConfig, control *os.File) (*programIO, int, error) {
	pio, stdio, startedNow, err := j.openRequest()
	if err != nil {
		return nil, -1, err
	}
	// A jail started now has built itself while the above was done here.
	if _, err := j.awaitBuild(0); err != nil {
		return nil, -1, err
	}
	if stdio, err = j.readyRequest(cfg, pio, stdio, control); err != nil {
		return nil, -1, err
	}
	if err := j.sendRequest(requestPlan(cfg, j.tmpBytes), stdio, startedNow); err != nil {
		return nil, -1, err
	}
	if err := j.sendGo(startedNow); err != nil {
		return nil, -1, err
	}
	closeFds(j.takeJoin())
	listener, err := j.programStarted(pio)
	return pio, listener, err
}

func (f *coldFlow) run(ctx context.Context, j *jail, spec *Spec, cfg *requestConfig) (res *Result, err error) {
	defer j.settle(&res, &err)
	j.spec = spec
	pio, listener, err := f.startProgram(j, cfg, nil)
	if err != nil {
		return nil, err
	}
	res, err = j.supervise(ctx, pio, listener)
	return markCold(res), err
}
