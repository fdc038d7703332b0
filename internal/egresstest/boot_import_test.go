package egresstest

// The test binary runs jails of its own (the runner re-executes
// /proc/self/exe as the jail's init stage): it links the C that runs
// before Go starts, as cmd/agentjail does.
import _ "agentjail/nsjail/boot"
