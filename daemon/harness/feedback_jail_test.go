package harness

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"agentjail/nsjail"
)

// A module that no environment has may be one of the program's own that
// the request did not send: the feedback says how to send it, and no
// longer only to use a package the environment has.
func TestImportFeedbackTellsAMissingFileFromAMissingPackage(t *testing.T) {
	sci := &Installed{Environment: "default", Packages: []string{"matplotlib", "numpy", "pandas"}}
	for _, env := range []*Installed{sci, {Environment: "plain"}, nil} {
		fb := ProgramFeedback(&Exception{Type: "ModuleNotFoundError", Message: "No module named 'mylib'", Line: 1}, nil, nil, env)
		assert.Contains(t, fb[0], "Nor is 'mylib' among the files sent with the request: a module of your own must be sent as a file", env)
		assert.Contains(t, fb[0], `files: [{"path": "mylib.py", "content": "…"}] (--file mylib.py=HOSTPATH on the command line)`)
		assert.Contains(t, fb[0], "If it is a package")
	}
	fb := ProgramFeedback(&Exception{Type: "ModuleNotFoundError", Message: "No module named 'tools.parse'", Line: 1}, nil, nil, sci)
	assert.Contains(t, fb[0], `"path": "tools/parse.py"`, "a submodule of a package of its own")
	fb = ProgramFeedback(&Exception{Type: "ModuleNotFoundError", Message: "No module named 'numpy.fancy'", Line: 1}, nil, nil, sci)
	assert.NotContains(t, fb[0], "files sent", "a submodule of an installed package is no file to send")
}

// A program that tries the network is told that the jail has none, for
// each usual form of the error, in the exception and in a test's detail.
func TestNetworkFeedback(t *testing.T) {
	errs := []Exception{
		{Type: "socket.gaierror", Message: "[Errno -3] Temporary failure in name resolution"},
		{Type: "socket.gaierror", Message: "[Errno -2] Name or service not known"},
		{Type: "OSError", Message: "[Errno 101] Network is unreachable"},
		{Type: "ConnectionRefusedError", Message: "[Errno 111] Connection refused"},
		{Type: "ConnectionRefusedError", Message: "no server"},
		{Type: "urllib.error.URLError", Message: "<urlopen error [Errno -3] Temporary failure in name resolution>"},
		{Type: "requests.exceptions.ConnectionError", Message: "HTTPSConnectionPool(host='pypi.org', port=443): Max retries exceeded with url: / (Caused by NameResolutionError(\"<urllib3.connection.HTTPSConnection object at 0x7f>: Failed to resolve 'pypi.org' ([Errno -3] Temporary failure in name resolution)\"))"},
		{Type: "requests.exceptions.ConnectionError", Message: "HTTPConnectionPool(host='1.1.1.1', port=80): Max retries exceeded with url: / (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f>: Failed to establish a new connection: [Errno 101] Network is unreachable'))"},
		{Type: "httpx.ConnectError", Message: "[Errno -3] Temporary failure in name resolution"},
	}
	for _, e := range errs {
		fb := ProgramFeedback(&e, nil, nil, nil)
		assert.Equal(t, 1, len(fb))
		assert.Contains(t, fb[0], "The jail has no network access", e.Type)
		assert.Equal(t, 1, strings.Count(fb[0], "network"), "said once: %q", fb[0])
	}
	tests := &Tests{Function: "get", Cases: []TestCase{{Name: "a"}, {Name: "b"}}}
	tr := &TestsResult{Total: 2, Failed: 2, Results: []TestResult{
		{Name: "a", Detail: "expected 1, got exception gaierror: [Errno -3] Temporary failure in name resolution"},
		{Name: "b", Detail: "expected 1, got exception gaierror: [Errno -3] Temporary failure in name resolution"}}}
	fb := ProgramFeedback(nil, tr, tests, nil)
	assert.Equal(t, 1, strings.Count(strings.Join(fb, " "), "The jail has no network access"), "%q", fb)
	for _, other := range []Exception{{Type: "OSError", Message: "[Errno 2] No such file or directory: 'x'"}, {Type: "ValueError", Message: "refused"}} {
		assert.NotContains(t, ProgramFeedback(&other, nil, nil, nil)[0], "network")
	}

	// pip, which the program ran: Debian's refusal, or no index reached.
	for _, out := range []string{
		"error: externally-managed-environment\n\n× This environment is externally managed\n",
		"WARNING: Retrying ... NewConnectionError ...\nERROR: Could not find a version that satisfies the requirement requests (from versions: none)\nERROR: No matching distribution found for requests\n",
	} {
		fb := JailFeedback(&nsjail.Result{Status: nsjail.StatusError, ExitCode: 1, Stderr: []byte(out)})
		assert.Contains(t, strings.Join(fb, " "), "Packages cannot be installed in the jail: pip has no network access there")
	}
	assert.Empty(t, JailFeedback(&nsjail.Result{Status: nsjail.StatusOK, Stderr: []byte("error: externally-managed-environment")}), "an ok run has no feedback")
}
