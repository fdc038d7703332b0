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
		Environments:       c.environments(),
		Start:              nsjail.StartMode(c.Jail.Start),
		OnForbiddenSyscall: c.forbiddenSyscallMode(),
		Collect:            nsjail.CollectLimits{FileBytes: c.Collect.FileBytes, TotalBytes: c.Collect.TotalBytes, Files: c.Collect.Files},
		Network:            c.egress(),
	}
}

// egress is the egress of [network]: nil when no request may ask for
// any (no policy, inline_allow false) or when the section is invalid
// (Validate says why).
func (c *Config) egress() *Egress {
	if len(c.Network.Policies) == 0 && !c.Network.InlineAllow {
		return nil
	}
	e, err := NewEgress(c.Network)
	if err != nil {
		return nil
	}
	return e
}

// PreparedTemplate is what the daemon's prepared jails of environment e
// hold ahead of a request (nsjail.Runner.KeepPrepared): its mounts and
// /etc, the harness, the default scratch size.
func (c *Config) PreparedTemplate(e *Environment) nsjail.PreparedTemplate {
	return nsjail.PreparedTemplate{
		Name:           e.Name,
		ReadOnlyMounts: e.ReadOnlyMounts,
		Etc:            e.CurrentEtc(),
		Code:           harness.SharedFiles(),
		Limits:         c.defaultLimits(),
	}
}

// ZygoteSpec is environment e's warm interpreter (nsjail.Runner.KeepWarm):
// its runtime, its preload, the harness every run has, and the bounds of
// jail.warm_ahead, jail.zygote_max_forks and jail.zygote_memory_bytes.
func (c *Config) ZygoteSpec(e *Environment) nsjail.ZygoteSpec {
	return nsjail.ZygoteSpec{
		Name:           e.Name,
		Python:         e.Python,
		ReadOnlyMounts: e.ReadOnlyMounts,
		Etc:            e.CurrentEtc(),
		Env:            e.Env,
		Preload:        e.Preload,
		// The harness, and its warm entry: loaded once by the zygote, its
		// main() runs each run's program.
		Code:  append(harness.SharedFiles(), harness.WarmEntry()),
		Entry: harness.WarmEntry().Path,
		// A run's files are written, before it joins its own cgroup, by
		// its init in the zygote's (and held in its request's plan while
		// they are): room for every run that may be set up at once.
		Limits:    nsjail.Limits{MemoryBytes: c.Jail.ZygoteMemoryBytes + 2*nsjail.MaxFilesBytes*int64(c.Admission.MaxConcurrent)},
		RunLimits: c.defaultLimits(),
		Ahead:     c.WarmAhead(),
		MaxForks:  c.Jail.ZygoteMaxForks,
	}
}
