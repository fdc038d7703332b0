package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --environment, --env and --start, without a daemon (the configuration
// of --config) and through one.
func TestRunEnvironmentFlags(t *testing.T) {
	jailHost(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	require.NoError(t, os.WriteFile(cfg, []byte("[environments.sci]\nenv = { AJ_A = \"env\", AJ_B = \"env\" }\n"), 0o644))
	prog := "import os; print(os.environ.get('AJ_A'), os.environ.get('AJ_B'))"

	code, out, errOut := bin(t, "", "run", "--config", cfg, "--environment", "sci", "--env", "AJ_B=flag", "-c", prog)
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "env flag\n", out, "the environment's variables, the flag's over them")
	code, out, _ = bin(t, "", "run", "--config", cfg, "--env", "AJ_A=x=y", "-c", prog)
	assert.Equal(t, 0, code)
	assert.Equal(t, "x=y None\n", out, "default: none of sci's")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", cfg, "--environment", "nope"}, `--environment: unknown environment "nope"; ` + cfg + ` has: default, sci`},
		{[]string{"--environment", "sci"}, `--environment: unknown environment "sci"; `},
		{[]string{"--env", "NOEQUALS"}, `--env: "NOEQUALS": want KEY=VALUE`},
		{[]string{"--env", "=1"}, `--env: "=1": want KEY=VALUE`},
		{[]string{"--env", "HOME=/x"}, "--env: "},
		{[]string{"--start", "hot"}, `--start: "hot": want warm or cold`},
		{[]string{"--start", "warm"}, "--start warm: runs without a daemon are cold"},
		{[]string{"--socket", "/nonexistent.sock", "--config", cfg}, "--config: the daemon runs with its own configuration"},
		{[]string{"--config", filepath.Join(dir, "missing.toml")}, "--config: "},
	} {
		code, _, errOut := bin(t, "", append(append([]string{"run"}, c.args...), "-c", "pass")...)
		assert.Equal(t, 2, code, "%v: %s", c.args, errOut)
		assert.Contains(t, errOut, c.want, c.args)
	}

	// A bad mount in the environment: the daemon's start-up check, here.
	require.NoError(t, os.WriteFile(cfg, []byte("[environments.bad]\nread_only_mounts = [\"/etc\"]\n"), 0o644))
	code, _, errOut = bin(t, "", "run", "--config", cfg, "--environment", "bad", "-c", "pass")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errOut, `environments.bad.read_only_mounts[0]: "/etc": is or lies below /etc`)

	// Through a daemon: its environments, warm or cold.
	d := startDaemon(t, t.TempDir(), "[peers]\nuids = [0]\n[environments.sci]\nenv = { AJ_A = \"daemon\" }\n")
	for _, start := range []string{"warm", "cold"} {
		code, out, errOut = bin(t, "", "run", "--socket", d.sock, "--json", "--environment", "sci", "--start", start, "--env", "AJ_B=flag", "-c", prog)
		assert.Equal(t, 0, code, errOut)
		assert.Contains(t, out, `"stdout":"daemon flag\n"`)
		assert.Contains(t, out, `"environment":"sci","start":"`+start+`"`)
	}
	code, _, errOut = bin(t, "", "run", "--socket", d.sock, "--environment", "nope", "-c", "pass")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `--environment: environment: unknown environment "nope"; this daemon has: default, sci`)
}
