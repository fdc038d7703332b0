package nsjail

// The test binary is also the jail's init stage (the runner re-executes
// /proc/self/exe): it links the C that runs before Go starts, as
// cmd/agentjail does.
import _ "agentjail/nsjail/boot"
