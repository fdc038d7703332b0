package main

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"agentjail/daemon"
)

func TestArchCheck(t *testing.T) {
	assert.True(t, archCheck("amd64").OK)
	arm := archCheck("arm64")
	assert.False(t, arm.OK)
	assert.Contains(t, arm.Detail, "arm64: not supported")
	assert.NotEmpty(t, arm.Fix)
}

// Ubuntu 23.10+ sets kernel.apparmor_restrict_unprivileged_userns = 1:
// `agentjail check` says what that does to jails and what to change.
func TestApparmorCheck(t *testing.T) {
	_, present := apparmorCheck("", false)
	assert.False(t, present, "no such sysctl (Debian, RHEL): no line")

	off, present := apparmorCheck("0\n", true)
	assert.True(t, present)
	assert.True(t, off.OK)

	on, _ := apparmorCheck("1\n", false)
	assert.False(t, on.OK, "restricted, and the trial jail failed")
	assert.Contains(t, on.Detail, "kernel.apparmor_restrict_unprivileged_userns = 1")
	assert.Contains(t, on.Detail, "the jail's set-up fails")
	assert.Contains(t, on.Fix, "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0")

	profiled, _ := apparmorCheck("1\n", true)
	assert.True(t, profiled.OK, "restricted, but the trial jail ran (a profile allows it)")

	rep := &checkReport{OK: true, Checks: []checkItem{{Name: "trial run", OK: true}}}
	addApparmorCheck(rep)
	assert.True(t, rep.OK)
}

// The daemon's start-up says what check says about the host's pids.
func TestWarnHostPids(t *testing.T) {
	var b strings.Builder
	cfg := daemon.DefaultConfig()
	cfg.Admission.MaxSessions = 4096
	warnHost(cfg, slog.New(slog.NewTextHandler(&b, nil)))
	// 4096 × 1025 is above every pid_max (at most 2^22): only a pids
	// limit of this process's cgroup keeps the warning away.
	if own := daemon.OwnPidsLimit(); own > 0 && own <= daemon.HostPidMax()*3/4 {
		assert.NotContains(t, b.String(), "TasksMax=", "bounded by its cgroup's pids.max %d", own)
		return
	}
	assert.Contains(t, b.String(), "level=WARN")
	assert.Contains(t, b.String(), "TasksMax=")
	assert.Contains(t, pidsCheck(cfg).Detail, "warning: ")
}

// What the daemon says at start-up about the host, one line per problem.
func TestHostWarnings(t *testing.T) {
	cfg := daemon.DefaultConfig()
	cfg.Admission.MaxConcurrent = 2
	assert.Empty(t, hostWarnings(cfg, 32768, 8192, "amd64", ""), "the shipped unit's TasksMax on Debian")
	assert.Empty(t, hostWarnings(cfg, 32768, 8192, "amd64", "0\n"))
	ws := hostWarnings(cfg, 32768, 0, "arm64", "1\n")
	if assert.Len(t, ws, 3) {
		assert.Contains(t, ws[0], "Set TasksMax= on the service")
		assert.Contains(t, ws[1], "arm64: not supported")
		assert.Contains(t, ws[2], "kernel.apparmor_restrict_unprivileged_userns = 1")
		assert.Contains(t, ws[2], "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0")
	}
}
