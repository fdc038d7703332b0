package nsjail

import (
	"os"
	"strconv"
)

// openNetwork calls the spec's Network hook (egress, docs/contract.md §8)
// with the jail's network namespace, once the jail is built and before
// its program starts: nothing of the program has run yet, so no program
// can hold the proxy's port first. The namespace is pid 1's, cold or
// warm (a warm run's program is forked into its init's namespaces). A
// warm run's pid 1 is not this process's child: its pid could be reused
// by another process once it ends, so it is named by the pidfd the run
// holds (setns takes a pidfd and CLONE_NEWNET). A cold jail's pid 1 is
// this process's child, not waited for yet: its /proc/PID/ns/net is its
// own. A spec without the hook costs nothing.
func (j *jail) openNetwork() error {
	if j.spec == nil || j.spec.Network == nil {
		return nil
	}
	ns := initPidfd(j)
	if ns == nil {
		if j.proc == nil {
			return &StageError{Stage: "network egress", Msg: "the jail has no process to find its network namespace by"}
		}
		f, err := os.Open("/proc/" + strconv.Itoa(j.proc.Pid) + "/ns/net")
		if err != nil {
			return stageErr("network egress: the jail's network namespace", err)
		}
		defer f.Close()
		ns = f
	}
	if err := j.spec.Network(ns); err != nil {
		return &StageError{Stage: "network egress", Msg: err.Error()}
	}
	return nil
}

// initPidfd is the pidfd of a warm run's pid 1, which the run keeps (the
// caller must not close it); nil for a cold jail.
func initPidfd(j *jail) *os.File {
	if n, ok := j.init.(*nestedInit); ok {
		return n.pidfd
	}
	return nil
}
