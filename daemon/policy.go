package daemon

import (
	"agentjail/daemon/harness"
	"agentjail/nsjail"
)

// Policy is what the configuration decides for every request.
func (c *Config) Policy() Policy {
	max := c.maxLimits()
	return Policy{
		Defaults:           c.defaultLimits(),
		Max:                &max,
		Python:             c.Jail.Python,
		ReadOnlyMounts:     c.Jail.ReadOnlyMounts,
		OnForbiddenSyscall: c.forbiddenSyscallMode(),
		Collect:            nsjail.CollectLimits{FileBytes: c.Collect.FileBytes, TotalBytes: c.Collect.TotalBytes, Files: c.Collect.Files},
	}
}

// PreparedTemplate is what the daemon's prepared jails hold ahead of a
// request (nsjail.Runner.KeepPrepared): the configured mounts, the
// harness, the default scratch size.
func (c *Config) PreparedTemplate() nsjail.PreparedTemplate {
	return nsjail.PreparedTemplate{
		ReadOnlyMounts: c.Jail.ReadOnlyMounts,
		Code:           harness.SharedFiles(),
		Limits:         c.defaultLimits(),
	}
}
