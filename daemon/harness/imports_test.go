//go:build linux

package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/nsjail"
)

// A program imports the files it was given, as in a directory on a
// laptop: the working directory (/workspace in a jail) is first on
// sys.path. Nothing else of what -I shuts opens: the user site,
// PYTHONPATH, PYTHONSTARTUP, PYTHONHOME, a sitecustomize.py or
// usercustomize.py in the workspace; and a file of the workspace named
// as a module of python's never stands in for it in the harness.

// shadows are workspace files named as modules python or the harness
// imports: each says on stderr that it ran, and has none of the module's
// names, so a harness that took it would break.
var shadows = []string{"sitecustomize", "usercustomize", "json", "_json", "traceback", "linecache", "tokenize",
	"asyncio", "reprlib", "io", "os", "stat", "time", "marshal", "encodings", "site", "warnings", "types"}

// workspace writes files (path: content) into a new directory, with the
// shadows, a user site and a PYTHONPATH directory; the environment
// variables that would reach them under plain python.
func workspace(t *testing.T, files map[string]string) (string, []string) {
	t.Helper()
	ws := t.TempDir()
	userSite := ".local/lib/python3.11/site-packages/"
	all := map[string]string{
		userSite + "usersite_mod.py":  "",
		userSite + "usercustomize.py": "import sys; sys.stderr.write('SHADOW user site usercustomize\\n')\n",
		userSite + "sitecustomize.py": "import sys; sys.stderr.write('SHADOW user site sitecustomize\\n')\n",
		"pp/pythonpath_mod.py":        "",
		"pp/sitecustomize.py":         "import sys; sys.stderr.write('SHADOW PYTHONPATH sitecustomize\\n')\n",
		"startup.py":                  "import sys; sys.stderr.write('SHADOW PYTHONSTARTUP\\n')\n",
		"nohome/lib/python3.11/os.py": "import sys; sys.stderr.write('SHADOW PYTHONHOME\\n')\n",
		"mylib.py":                    "X = 41\n",
		"pkg/__init__.py":             "",
		"pkg/mod.py":                  "from . import helper\nY = helper.Z + '!'\n",
		"pkg/helper.py":               "Z = 'pkg'\n",
	}
	for _, s := range shadows {
		all[s+".py"] = "import sys; sys.stderr.write('SHADOW workspace " + s + "\\n')\n"
	}
	for p, c := range files {
		all[p] = c
	}
	for p, c := range all {
		full := filepath.Join(ws, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(c), 0o644))
	}
	env := []string{"PYTHONPATH=" + filepath.Join(ws, "pp"), "PYTHONSTARTUP=" + filepath.Join(ws, "startup.py"),
		"PYTHONHOME=" + filepath.Join(ws, "nohome"), "PYTHONUSERBASE=" + filepath.Join(ws, ".local"), "PYTHONNOUSERSITE="}
	return ws, env
}

// importsProbe imports the given files, says what else it can import, and
// ends with code (an uncaught exception, or the tests' function).
const importsProbe = `import sys, mylib, pkg.mod
print(sys.path[0] == __import__("os").getcwd(), mylib.X + 1, pkg.mod.Y)
for name in ("usersite_mod", "pythonpath_mod"):
    try:
        __import__(name)
        print("imported", name)
    except ModuleNotFoundError:
        print("no", name)
`

func TestHarnessImportsTheRequestsFiles(t *testing.T) {
	ws, env := workspace(t, nil)
	dir := layout(t, []byte(importsProbe+"raise ValueError('boom')\n"), nil)
	r := runPythonIn(t, ws, env, []string{filepath.Join(dir, harnessName), dir}, "", true)
	assert.Equal(t, "True 42 pkg!\nno usersite_mod\nno pythonpath_mod\n", r.stdout)
	assert.NotContains(t, r.stderr, "SHADOW", "a file of the workspace ran in python's or the harness's stead")
	assert.Contains(t, r.stderr, "ValueError: boom")
	assert.Equal(t, 1, r.jail.ExitCode)
	e := ParseReport(r.report, r.truncated, nil).UncaughtException(r.jail)
	require.NotNil(t, e, "the harness reported no exception: %s", r.stderr)
	assert.Equal(t, "ValueError", e.Type)
	assert.Equal(t, 9, e.Line)
}

// The tests' path: the harness imports asyncio for an async function, and
// tokenize for an undecodable source, after the program ran.
func TestHarnessImportsTheRequestsFilesWithTests(t *testing.T) {
	ws, env := workspace(t, nil)
	code := importsProbe + "async def add(a, b):\n    return a + b\n"
	tests := addTests()
	dir := layout(t, []byte(code), tests)
	r := runPythonIn(t, ws, env, []string{filepath.Join(dir, harnessName), dir}, "", true)
	assert.Equal(t, "True 42 pkg!\nno usersite_mod\nno pythonpath_mod\n", r.stdout, r.stderr)
	assert.NotContains(t, r.stderr, "SHADOW", "a file of the workspace ran in python's or the harness's stead")
	requirePassed(t, ParseReport(r.report, r.truncated, tests).Verdicts(tests, r.jail), true, true, true)
}

// A program may shadow a module of python's for itself, as on a laptop;
// the harness still reports with python's own.
func TestHarnessProgramsOwnShadowStaysItsOwn(t *testing.T) {
	ws, env := workspace(t, map[string]string{"_json.py": "MINE = 1\n", "tokenize.py": "MINE = 2\n"})
	code := "import _json, tokenize\nprint(_json.MINE, tokenize.MINE)\nraise KeyError('k')\n"
	dir := layout(t, []byte(code), nil)
	r := runPythonIn(t, ws, env, []string{filepath.Join(dir, harnessName), dir}, "", true)
	assert.Equal(t, "1 2\n", r.stdout, r.stderr)
	e := ParseReport(r.report, r.truncated, nil).UncaughtException(r.jail)
	require.NotNil(t, e, r.stderr)
	assert.Equal(t, "KeyError", e.Type)
	assert.Equal(t, "'k'", e.Message)
}

// A session's calls import the files given with them or with an earlier
// call; a call's exception is still shown with python's traceback and
// linecache, whatever the workspace holds.
func TestSessionImportsTheCallsFiles(t *testing.T) {
	h := startSessionHost(t)
	files := []nsjail.File{}
	for _, s := range shadows {
		files = append(files, nsjail.File{Path: s + ".py", Content: []byte("import sys; sys.stderr.write('SHADOW workspace " + s + "\\n')\n")})
	}
	c := h.call("try:\n    import mylib\nexcept ModuleNotFoundError as e:\n    print(e)\n", nil, files, "")
	assert.Equal(t, "No module named 'mylib'\n", c.stdout, c.stderr)
	c = h.call("import mylib, pkg.mod\nmylib.X + 1, pkg.mod.Y", nil, []nsjail.File{
		{Path: "mylib.py", Content: []byte("X = 41\n")}, {Path: "pkg/__init__.py"},
		{Path: "pkg/mod.py", Content: []byte("Y = 'pkg'\n")}}, "")
	assert.Equal(t, "(42, 'pkg')", value(c), c.stderr)
	c = h.call("def f():\n    return 1 / 0\nf()", nil, nil, "")
	assert.Equal(t, int32(1<<8), c.status)
	assert.Contains(t, c.stderr, "return 1 / 0", "the source line, by python's linecache")
	assert.Contains(t, c.stderr, "ZeroDivisionError: division by zero")
	assert.NotContains(t, c.stderr, "SHADOW")
	rep := ParseReport(c.report, false, nil)
	require.NotNil(t, rep.Exception)
	assert.Equal(t, "ZeroDivisionError", rep.Exception.Type)
	tests := &Tests{Function: "add", Cases: []TestCase{{Name: "a", Args: []json.RawMessage{json.RawMessage("1"), json.RawMessage("2")}, Expected: json.RawMessage("3")}}}
	require.NoError(t, tests.Validate())
	c = h.call("async def add(a, b):\n    return a + b\n", tests, nil, "")
	assert.Equal(t, 1, ParseReport(c.report, false, tests).Verdicts(tests, &nsjail.Result{Status: nsjail.StatusOK}).Passed, string(c.report)+c.stderr)
	assert.False(t, strings.Contains(c.stderr, "SHADOW"), c.stderr)
	assert.Equal(t, "'ok'", value(h.call("'ok'", nil, nil, "")), "the session lives on")
}
