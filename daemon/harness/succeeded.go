package harness

import "agentjail/nsjail"

// Succeeded reports whether a result's feedback must be empty
// (docs/contract.md §3.10): its status is ok and every test passed (or it
// had none). A forbidden call that the program survived, or a refused
// fork, is then in its own field (`seccomp`, `pids_max_hits`), not blamed.
func Succeeded(status string, tr *TestsResult) bool {
	return status == string(nsjail.StatusOK) && (tr == nil || tr.Failed == 0)
}
