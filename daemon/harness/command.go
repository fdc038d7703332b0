package harness

import "agentjail/nsjail"

// CommandPayload is CallPayload for a call that runs an argv instead of
// code: session.py spawns it in a session of its own, on the call's stdio,
// and its wait status is the call's. argv must be non-empty, files must
// have passed nsjail.ValidateFiles.
func CommandPayload(name string, argv []string, files []nsjail.File) []byte {
	head := callHead{Name: name, Tests: -1, Files: [][2]any{}, Command: argv}
	return head.payload(nil, nil, files)
}
