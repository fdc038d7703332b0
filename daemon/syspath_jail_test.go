package daemon

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What a jail is, seen by a program that does not expect it, in real
// jails, cold and warm, runs and sessions: it imports the files it was
// given (nothing else of what python3 -I shuts opens); a module it did not
// send, the network and pip get feedback that says why; a session's call
// that catches its interrupt is marked with the limit that fired.

// jailFiles are the request's files: modules to import, and files that
// python would run or import if -I's doors were open, or if the
// workspace shadowed python's modules for the harness.
func jailFiles() []map[string]string {
	say := func(what string) string {
		return "import sys; sys.stderr.write('SHADOW " + what + "\\n'); open('/tmp/shadow_ran', 'a').write('" + what + "\\n')\n"
	}
	files := []map[string]string{
		{"path": "mylib.py", "content": "X = 41\n"},
		{"path": "pkg/__init__.py", "content": ""},
		{"path": "pkg/mod.py", "content": "from . import helper\nY = helper.Z + '!'\n"},
		{"path": "pkg/helper.py", "content": "Z = 'pkg'\n"},
		{"path": ".local/lib/python3.11/site-packages/usersite_mod.py", "content": ""},
		{"path": ".local/lib/python3.11/site-packages/usercustomize.py", "content": say("user site usercustomize")},
		{"path": "pp/pythonpath_mod.py", "content": ""},
		{"path": "pp/sitecustomize.py", "content": say("PYTHONPATH sitecustomize")},
		{"path": "startup.py", "content": say("PYTHONSTARTUP")},
		{"path": "nohome/lib/python3.11/os.py", "content": say("PYTHONHOME")},
		{"path": "evil.pth", "content": "import sys; open('/tmp/shadow_ran', 'a').write('pth\\n')\n"},
	}
	for _, m := range []string{"sitecustomize", "usercustomize", "json", "_json", "traceback", "linecache", "tokenize",
		"asyncio", "io", "os", "stat", "site", "warnings", "encodings", "socket", "selectors", "signal"} {
		files = append(files, map[string]string{"path": m + ".py", "content": say("workspace " + m)})
	}
	return files
}

var jailEnv = map[string]string{"PYTHONPATH": "/workspace/pp", "PYTHONSTARTUP": "/workspace/startup.py",
	"PYTHONHOME": "/workspace/nohome", "PYTHONUSERBASE": "/workspace/.local", "PYTHONINSPECT": "1"}

const jailProbe = `import os, sys, mylib, pkg.mod
print(sys.path[0], mylib.X + 1, pkg.mod.Y, os.path.exists("/tmp/shadow_ran"))
for name in ("usersite_mod", "pythonpath_mod"):
    try:
        __import__(name)
        print("imported", name)
    except ModuleNotFoundError:
        print("no", name)
`

const probeOut = "/workspace 42 pkg! False\nno usersite_mod\nno pythonpath_mod\n"

func hasFeedback(fb []string, part string) bool {
	return slices.ContainsFunc(fb, func(s string) bool { return strings.Contains(s, part) })
}

func TestRealJailImportsTheRequestsFiles(t *testing.T) {
	r := realRunner(t) // first: testOptions then has its environments, and their zygotes
	_, _, c := startServer(t, testOptions(), r)
	for _, start := range []string{"cold", "warm"} {
		t.Run(start, func(t *testing.T) {
			res := runJSON(t, c, map[string]any{"code": jailProbe + "raise ValueError('boom')\n", "start": start, "files": jailFiles(), "env": jailEnv})
			if testStart() == "warm" {
				assert.Equal(t, start, res.Start)
			}
			assert.Equal(t, probeOut, res.Stdout, res.Stderr)
			assert.NotContains(t, res.Stderr, "SHADOW", "a file of the workspace ran in python's or the harness's stead")
			assert.NotContains(t, res.Stderr, ">>>", "PYTHONINSPECT")
			assert.Equal(t, "error", res.Status)
			require.NotNil(t, res.Exception, res.Stderr)
			assert.Equal(t, "ValueError", res.Exception.Type)
			assert.Equal(t, 9, res.Exception.Line)

			// With tests: the harness's imports after the program ran.
			res = runJSON(t, c, map[string]any{"code": jailProbe + "async def add(a, b):\n    return a + b\n", "start": start,
				"files": jailFiles(), "env": jailEnv, "tests": map[string]any{"function": "add", "cases": []map[string]any{{"args": []int{1, 2}, "expected": 3}}}})
			assert.Equal(t, probeOut, res.Stdout, res.Stderr)
			assert.NotContains(t, res.Stderr, "SHADOW")
			require.NotNil(t, res.Tests)
			assert.Equal(t, 1, res.Tests.Passed, res.Tests.Results)

			// A module of its own that the request did not send.
			res = runJSON(t, c, map[string]any{"code": "import mylib\n", "start": start})
			require.NotNil(t, res.Exception)
			assert.Equal(t, "ModuleNotFoundError", res.Exception.Type)
			assert.True(t, hasFeedback(res.Feedback, "Nor is 'mylib' among the files sent with the request: a module of your own must be sent as a file"), res.Feedback)
		})
	}
}

func TestRealJailSessionImportsTheCallsFiles(t *testing.T) {
	s, _, c := sessionServer(t, nil)
	for _, start := range []string{"warm", "cold"} {
		t.Run(start, func(t *testing.T) {
			sc := startSession(t, s, c, map[string]any{"start": start, "files": jailFiles(), "env": jailEnv})
			if testStart() == "warm" {
				assert.Equal(t, start, sc.Start)
			}
			a := sessionRun(t, c, sc.ID, map[string]any{"code": "import os, sys\nsys.path[0], os.path.exists('/tmp/shadow_ran')"})
			assert.Equal(t, "('/workspace', False)", val(a), "nothing of the workspace ran as the session started: %s", a.Stderr)
			a = sessionRun(t, c, sc.ID, map[string]any{"code": jailProbe})
			assert.Equal(t, probeOut, a.Stdout, a.Stderr)
			a = sessionRun(t, c, sc.ID, map[string]any{"code": "import later\nlater.V", "files": []map[string]string{{"path": "later.py", "content": "V = 'sent with the call'\n"}}})
			assert.Equal(t, "'sent with the call'", val(a), a.Stderr)
			a = sessionRun(t, c, sc.ID, map[string]any{"code": "def f():\n    return 1 / 0\nf()"})
			assert.Equal(t, "error", a.Status)
			assert.Contains(t, a.Stderr, "return 1 / 0", "python's traceback, with its source line")
			assert.NotContains(t, a.Stderr, "SHADOW")
			a = sessionRun(t, c, sc.ID, map[string]any{"code": "import notsent"})
			assert.True(t, hasFeedback(a.Feedback, "Nor is 'notsent' among the files sent"), a.Feedback)
			assert.True(t, a.Session.Alive)
		})
	}
}

func TestRealJailSaysItHasNoNetwork(t *testing.T) {
	r := realRunner(t) // first: testOptions then has its environments, and their zygotes
	_, _, c := startServer(t, testOptions(), r)
	for _, start := range []string{"cold", "warm"} {
		for _, code := range []string{
			"import socket\nsocket.getaddrinfo('example.com', 80)",
			"import socket\nsocket.create_connection(('192.0.2.1', 80), timeout=5)",
			"import urllib.request\nurllib.request.urlopen('http://example.com/', timeout=5)",
			"import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=5)",
		} {
			res := runJSON(t, c, map[string]any{"code": code, "start": start})
			assert.Equal(t, "error", res.Status, code)
			assert.True(t, hasFeedback(res.Feedback, "The jail has no network access"), "%s: %s %q", start, res.Stderr, res.Feedback)
		}
	}
}

// pip, which a program may try when a module is missing, fails for want
// of a network, and the feedback says that nothing can be installed.
func TestRealJailSaysPipCannotInstall(t *testing.T) {
	r := realRunner(t)
	_, _, c := startServer(t, testOptions(), r)
	for _, start := range []string{"cold", "warm"} {
		res := runJSON(t, c, map[string]any{"start": start,
			"code": "import subprocess, sys\nsys.exit(subprocess.run([sys.executable, '-m', 'pip', 'install', 'requests']).returncode)"})
		if strings.Contains(res.Stderr, "No module named pip") {
			t.Logf("no pip in the jail's python: %s", res.Stderr)
			continue
		}
		assert.Equal(t, "error", res.Status, res.Stderr)
		assert.True(t, hasFeedback(res.Feedback, "Packages cannot be installed in the jail"), "%s: %q", res.Stderr, res.Feedback)
	}
}

// A session's call that catches the KeyboardInterrupt of its wall limit
// and goes on is killed for that limit, and told that it caught it.
func TestRealJailSessionCallThatCatchesItsInterrupt(t *testing.T) {
	s, _, c := sessionServer(t, nil)
	for _, start := range []string{"warm", "cold"} {
		t.Run(start, func(t *testing.T) {
			sc := startSession(t, s, c, map[string]any{"start": start})
			a := sessionRun(t, c, sc.ID, map[string]any{"code": "import time\ntry:\n    time.sleep(30)\nexcept KeyboardInterrupt:\n    pass\ntime.sleep(0.5)\n'went on'",
				"limits": map[string]any{"wall_time_ms": 1000}})
			assert.Equal(t, "killed", a.Status)
			assert.Equal(t, "wall_timeout", a.KillReason)
			assert.Equal(t, "", a.Signal, "it did not die of the interrupt")
			assert.Equal(t, 0, a.ExitCode)
			assert.Nil(t, a.Exception)
			assert.Equal(t, "'went on'", val(a))
			assert.GreaterOrEqual(t, a.WallTimeMs, 1500.0)
			assert.True(t, hasFeedback(a.Feedback, "The call was interrupted (KeyboardInterrupt) when its wall-clock limit of 1.0 s (wall_time_ms) fired, but its code caught the interrupt and went on"), "%q", a.Feedback)
			assert.False(t, hasFeedback(a.Feedback, "The program was killed"), "%q", a.Feedback)
			assert.True(t, a.Session.Alive)

			a = sessionRun(t, c, sc.ID, map[string]any{"code": "try:\n    time.sleep(30)\nexcept BaseException:\n    raise ValueError('then this')",
				"limits": map[string]any{"wall_time_ms": 500}})
			assert.Equal(t, "killed", a.Status)
			assert.Equal(t, "wall_timeout", a.KillReason)
			assert.Equal(t, 1, a.ExitCode)
			require.NotNil(t, a.Exception)
			assert.Equal(t, "ValueError", a.Exception.Type)
			assert.True(t, hasFeedback(a.Feedback, "caught the interrupt"), "%q", a.Feedback)

			a = sessionRun(t, c, sc.ID, map[string]any{"code": "'next'"})
			assert.Equal(t, "ok", a.Status, fmt.Sprint(a.Feedback))
			assert.Empty(t, a.Feedback)
		})
	}
}
