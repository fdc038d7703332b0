package nsjail

// openNetwork calls the spec's Network hook (egress, docs/contract.md §8)
// with the jail's network namespace, once the jail is built and before
// its program starts: nothing of the program has run yet, so no program
// can hold the proxy's port first. The namespace is pid 1's, cold or
// warm (a warm run's program is forked into its init's namespaces). A
// warm run's pid 1 is not this process's child: its pid could be reused
// by another process once it ends, so it is named by the pidfd the run
// holds (setns takes a pidfd and CLONE_NEWNET). A cold jail's pid 1 is
// this process's child, not waited for yet: its /proc/PID/ns/net is its
// own (pid1.netns). A spec without the hook costs nothing.
func (j *jail) openNetwork() error {
	if j.spec == nil || j.spec.Network == nil {
		return nil
	}
	if j.pid1 == nil {
		return &StageError{Stage: "network egress", Msg: "the jail has no process to find its network namespace by"}
	}
	ns, err := j.pid1.netns()
	if err != nil {
		return stageErr("network egress: the jail's network namespace", err)
	}
	defer ns.Close()
	if err := j.spec.Network(ns); err != nil {
		return &StageError{Stage: "network egress", Msg: err.Error()}
	}
	return nil
}
