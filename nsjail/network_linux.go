package nsjail

import (
	"os"
	"strconv"
)

// openNetwork calls the spec's Network hook (egress, docs/contract.md §8)
// with the jail's network namespace, once the jail is built and before
// the program has its go: nothing of the program has run yet, so no
// program can hold the proxy's port first. A warm run's program lives in
// its init's namespaces, which the init's pidfd names (setns takes a
// pidfd and CLONE_NEWNET); a cold jail's init is this process's child,
// not waited for yet, so its /proc/PID/ns/net is its own. A spec without
// the hook costs nothing.
func (j *jail) openNetwork() error {
	if j.spec == nil || j.spec.Network == nil {
		return nil
	}
	ns := j.pidfd
	if ns == nil {
		if j.proc == nil {
			return &StageError{Stage: "network egress", Msg: "the jail has no process to find its network namespace by"}
		}
		f, err := os.Open("/proc/" + strconv.Itoa(j.proc.Pid) + "/ns/net")
		if err != nil {
			return stageErr("network egress: the jail's network namespace", err)
		}
		ns = f
		defer ns.Close()
	}
	if err := j.spec.Network(ns); err != nil {
		return &StageError{Stage: "network egress", Msg: err.Error()}
	}
	return nil
}
