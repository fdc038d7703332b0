package nsjail

import (
	"os"

	"golang.org/x/sys/unix"
)

// openNetwork calls the spec's Network hook (egress, docs/contract.md §8)
// with the jail's network namespace, once the jail is built and before
// the program has its go: nothing of the program has run yet, so no
// program can hold the proxy's port first. A warm run's program lives in
// its init's namespaces, which the init's pidfd names; a cold jail's
// init is this process's child, named by a pidfd opened now (setns takes
// a pidfd and CLONE_NEWNET). A spec without the hook costs nothing.
func (j *jail) openNetwork() error {
	if j.spec == nil || j.spec.Network == nil {
		return nil
	}
	ns := j.pidfd
	if ns == nil {
		if j.proc == nil {
			return &StageError{Stage: "network egress", Msg: "the jail has no process to find its network namespace by"}
		}
		fd, err := unix.PidfdOpen(j.proc.Pid, 0)
		if err != nil {
			return stageErr("network egress: pidfd of the jail's init", err)
		}
		ns = os.NewFile(uintptr(fd), "jail-pidfd")
		defer ns.Close()
	}
	if err := j.spec.Network(ns); err != nil {
		return &StageError{Stage: "network egress", Msg: err.Error()}
	}
	return nil
}
