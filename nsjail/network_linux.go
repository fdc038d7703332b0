package nsjail

import (
	"os"
	"strconv"
)

// openNetwork calls the spec's Network hook (egress, docs/contract.md §8)
// with the jail's network namespace, once the jail is built and before
// its program starts: nothing of the program has run yet, so no program
// can hold the proxy's port first. The namespace is pid 1's, cold or
// warm (a warm run's program is forked into its init's namespaces); pid
// 1 is alive and not waited for while the request is delivered. A spec
// without the hook costs nothing.
func (j *jail) openNetwork() error {
	if j.spec == nil || j.spec.Network == nil {
		return nil
	}
	if j.proc == nil {
		return &StageError{Stage: "network egress", Msg: "the jail has no process to find its network namespace by"}
	}
	ns, err := os.Open("/proc/" + strconv.Itoa(j.proc.Pid) + "/ns/net")
	if err != nil {
		return stageErr("network egress: the jail's network namespace", err)
	}
	defer ns.Close()
	if err := j.spec.Network(ns); err != nil {
		return &StageError{Stage: "network egress", Msg: err.Error()}
	}
	return nil
}
