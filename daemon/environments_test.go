package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
	"agentjail/nsjail"
)

// An older file ([jail] python, read_only_mounts) keeps working: its keys
// are the environment "default".
func TestOldSpellingIsTheDefaultEnvironment(t *testing.T) {
	c, err := parseConfig([]byte("[jail]\npython = \"/opt/py/bin/python3\"\nread_only_mounts = [\"/opt/py\"]\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"default"}, c.EnvironmentNames())
	e := c.Policy().Environments["default"]
	assert.Equal(t, "/opt/py/bin/python3", e.Python)
	assert.Equal(t, []string{"/opt/py"}, e.ReadOnlyMounts)

	// Errors about it name the keys the file used.
	_, err = parseConfig([]byte("[jail]\npython = \"python3\"\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `line 2: jail.python: "python3" must be a clean absolute path`)

	// A file with no environment at all has "default" too.
	c, err = parseConfig([]byte("[environments.sci]\npreload = [\"numpy\"]\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"default", "sci"}, c.EnvironmentNames())
	assert.Equal(t, nsjail.DefaultPython, c.Policy().Environments["sci"].Python)
}

func TestBadEnvironmentsNameWhatToFix(t *testing.T) {
	cases := []struct{ doc, want string }{
		{"[jail]\npython = \"/usr/bin/python3\"\n[environments.default]\npython = \"/usr/bin/python3\"",
			"line 2: jail.python: the file sets both [jail] python/read_only_mounts and [environments.default]: they are the same environment; keep [environments.default] and remove jail.python and jail.read_only_mounts"},
		{"[environments.a]\npython = \"/usr/bin/python3\"\n[environments.a]\npreload = []", "line 3: environments.a: table [environments.a] is given twice (first on line 1)"},
		{"[environments.Sci]\npython = \"/usr/bin/python3\"", `environments.Sci: "Sci" is not an environment name: lower-case letters, digits, _ and -`},
		{"[environments.empty]", "environments.empty: is empty: set python (and read_only_mounts, env, preload as needed), or remove the table"},
		{"[environments.a]\npython = \"bin/python3\"", `line 2: environments.a.python: "bin/python3" must be a clean absolute path`},
		{"[environments.a]\nread_only_mounts = [\"/opt/x/\"]", `line 2: environments.a.read_only_mounts[0]: "/opt/x/" must be a clean absolute path other than /`},
		{"[environments.a]\nread_only_mounts = [\"/\"]", `environments.a.read_only_mounts[0]: "/" must be a clean absolute path other than /`},
		{"[environments.a]\nenv = { HOME = \"/x\" }", "line 2: environments.a.env: HOME is the jail's own (HOME=/workspace, TMPDIR=/tmp) and cannot be set"},
		{"[environments.a]\nenv = { \"A-B\" = \"1\" }", `line 2: environments.a.env: "A-B" is not a variable name`},
		{"[environments.a]\nenv = { A = 1 }", "line 2: environments.a.env: A: must be a string, got an integer (1)"},
		{"[environments.a]\nenv = [\"A=1\"]", "line 2: environments.a.env: must be a table (e.g. { NAME = \"value\" }), got an array"},
		{"[environments.a]\npreload = [\"numpy\", \"os.path;rm\"]", `line 2: environments.a.preload[1]: "os.path;rm" is not a module name (e.g. "numpy" or "matplotlib.pyplot")`},
		{"[environments.a]\npreload = \"numpy\"", "line 2: environments.a.preload: must be an array, got a string"},
		{"[environments.a]\npythn = \"/usr/bin/python3\"", `line 2: unknown key "environments.a.pythn" (did you mean "environments.a.python"?)`},
		{"environments = 3", "line 1: environments: must be a table of tables ([environments.NAME]), got an integer (3)"},
		{"[environments]\na = 3", "environments.a: must be a table ([environments.a]), got an integer (3)"},
	}
	for _, tc := range cases {
		_, err := parseConfig([]byte(tc.doc))
		if assert.Error(t, err, tc.doc) {
			assert.Contains(t, err.Error(), tc.want, tc.doc)
			var ce *ConfigError
			assert.True(t, errors.As(err, &ce), "%q: %T", tc.doc, err)
		}
	}
}

// mountDir is a fresh root-owned directory (mode 0755) where a jail may
// bind one: not below /tmp, which no environment may bind.
func mountDir(t *testing.T) string {
	t.Helper()
	systest.Require(t, systest.Root)
	require.NoError(t, os.MkdirAll("/var/lib/agentjail-test", 0o755))
	d, err := os.MkdirTemp("/var/lib/agentjail-test", "env-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(d, 0o755))
	t.Cleanup(func() {
		os.RemoveAll(d)
		os.Remove("/var/lib/agentjail-test") // when no other test uses it
	})
	return d
}

// Every rule of the mount validation, each refusal with its key, the path
// and the rule, all at once, before a jail ever binds one.
func TestMountRules(t *testing.T) {
	d := mountDir(t)
	file := filepath.Join(d, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	users := filepath.Join(d, "users")
	require.NoError(t, os.Mkdir(users, 0o755))
	require.NoError(t, os.Chown(users, 1000, 1000))
	group := filepath.Join(d, "group")
	require.NoError(t, os.Mkdir(group, 0o775))
	require.NoError(t, os.Chown(group, 0, 50))
	require.NoError(t, os.Chmod(group, 0o775))
	open := filepath.Join(d, "open")
	require.NoError(t, os.MkdirAll(filepath.Join(open, "below"), 0o755))
	require.NoError(t, os.Chmod(open, 0o777))
	sticky := filepath.Join(d, "sticky")
	require.NoError(t, os.MkdirAll(filepath.Join(sticky, "below"), 0o755))
	require.NoError(t, os.Chmod(sticky, os.ModeSticky|0o777))
	toEtc := filepath.Join(d, "to-etc")
	require.NoError(t, os.Symlink("/etc/ssl", toEtc))
	holds := filepath.Join(d, "holds")
	require.NoError(t, os.MkdirAll(filepath.Join(holds, "conf"), 0o755))
	good := filepath.Join(d, "good")
	require.NoError(t, os.Mkdir(good, 0o755))

	cases := []struct{ mount, want string }{
		{filepath.Join(d, "missing"), "cannot be bound: no such file or directory"},
		{file, "is not a directory (a read-only mount binds a directory at the same path)"},
		{"/proc/self", "is or lies below /proc"},
		{"/sys", "is or lies below /sys"},
		{"/dev", "is or lies below /dev"},
		{"/run/systemd", "is or lies below /run"},
		{"/tmp", "is or lies below /tmp"},
		{"/var/tmp", "is or lies below /var/tmp"},
		{"/etc", "is or lies below /etc"},
		{"/root", "is or lies below /root"},
		{"/home", "is or lies below /home"},
		{"/boot", "is or lies below /boot"},
		{toEtc, "is or lies below /etc"}, // through a link
		{holds, "holds the daemon's configuration file " + filepath.Join(holds, "conf", "config.toml")},
		{users, users + " is owned by uid 1000, not root: that user could change what every jail of the environment runs"},
		{group, group + " is writable by group 50 (mode 0775)"},
		{filepath.Join(open, "below"), open + " is writable by every user (mode 0777)"},
		{filepath.Join(sticky, "below"), sticky + " is writable by every user (mode 0777, sticky)"},
	}
	for _, tc := range cases {
		c := DefaultConfig()
		c.Environments["x"] = EnvironmentConfig{ReadOnlyMounts: []string{good, tc.mount}}
		err := c.CheckHost(filepath.Join(holds, "conf", "config.toml"), "/run/agentjail/agentjail.sock")
		if assert.Error(t, err, tc.mount) {
			assert.Contains(t, err.Error(), "environments.x.read_only_mounts[1]: \""+tc.mount+"\": "+tc.want, tc.mount)
			assert.NotContains(t, err.Error(), "read_only_mounts[0]", "the good one passes")
		}
	}
	// The socket's directory, too.
	c := DefaultConfig()
	c.Environments["x"] = EnvironmentConfig{ReadOnlyMounts: []string{holds}}
	err := c.CheckHost("", filepath.Join(holds, "s.sock"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "holds the daemon's socket")

	// Every problem at once, the older spelling's keys in its messages.
	c, err = parseConfig([]byte("[jail]\nread_only_mounts = [\"/etc\", \"" + file + "\"]\n[environments.b]\nread_only_mounts = [\"/tmp\"]\n"))
	require.NoError(t, err)
	err = c.CheckHost("", "")
	require.Error(t, err)
	for _, want := range []string{"jail.read_only_mounts[0]: \"/etc\"", "jail.read_only_mounts[1]: \"" + file + "\"", "environments.b.read_only_mounts[0]: \"/tmp\""} {
		assert.Contains(t, err.Error(), want)
	}

	// A good mount passes; a python outside every bind does not.
	c = DefaultConfig()
	c.Environments["x"] = EnvironmentConfig{ReadOnlyMounts: []string{good}}
	require.NoError(t, c.CheckHost("", ""))
	c.Environments["y"] = EnvironmentConfig{Python: "/opt/nowhere/python3"}
	err = c.CheckHost("", "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "environments.y.python: python \"/opt/nowhere/python3\": ")
}

// A virtualenv's python is a link to the system's: it passes when the venv
// is mounted, through links that each lie inside the binds.
func TestVenvPythonResolvesThroughItsLinks(t *testing.T) {
	d := mountDir(t)
	require.NoError(t, os.MkdirAll(filepath.Join(d, "bin"), 0o755))
	require.NoError(t, os.Symlink("/usr/bin/python3", filepath.Join(d, "bin", "python3")))
	require.NoError(t, os.Symlink("python3", filepath.Join(d, "bin", "python")))
	assert.NoError(t, nsjail.CheckPythonIn(filepath.Join(d, "bin", "python"), []string{d}))
	err := nsjail.CheckPython(filepath.Join(d, "bin", "python"))
	require.Error(t, err, "not mounted")
	assert.Contains(t, err.Error(), "outside the directories bound into the jail")
	// A link out through a directory no jail has.
	require.NoError(t, os.Symlink("/etc/alternatives/nothing-python", filepath.Join(d, "bin", "alt")))
	err = nsjail.CheckPythonIn(filepath.Join(d, "bin", "alt"), []string{d})
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "no such file") || strings.Contains(err.Error(), "outside"), err.Error())
}

func TestRequestNamesItsEnvironment(t *testing.T) {
	p := DefaultConfig().Policy()
	code := "pass"
	_, err := (&Request{Code: &code, Environment: "sci"}).Job(p)
	require.Error(t, err)
	assert.Equal(t, `environment: unknown environment "sci"; this daemon has: default`, err.Error())
	_, err = (&Request{Code: &code, Start: "hot"}).Job(p)
	require.Error(t, err)
	assert.Equal(t, `start: must be "warm" or "cold", got "hot"`, err.Error())

	c, err := parseConfig([]byte("[environments.sci]\nenv = { A = \"1\" }\n"))
	require.NoError(t, err)
	p = c.Policy()
	j, err := (&Request{Code: &code, Environment: "sci", Start: "cold"}).Job(p)
	require.NoError(t, err)
	assert.Equal(t, "sci", j.Environment)
	assert.Equal(t, map[string]string{"A": "1"}, j.Spec.DefaultEnv)
	assert.Equal(t, nsjail.StartCold, j.Spec.Start)
	j, err = (&Request{Code: &code}).Job(p)
	require.NoError(t, err)
	assert.Equal(t, "default", j.Environment)
	assert.Equal(t, nsjail.StartWarm, j.Spec.Start, "the daemon's default")
	_, err = (&Request{Code: &code, Environment: "nope"}).Job(p)
	assert.Equal(t, `environment: unknown environment "nope"; this daemon has: default, sci`, err.Error())
}
