package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

func TestRunWithNode(t *testing.T) {
	for _, c := range []struct{ in, node, want string }{
		{`{"status":"ok","stdout":"42\n"}`, "node-1", `{"status":"ok","stdout":"42\n","node":"node-1"}`},
		{"{\"status\":\"ok\"}\n", "n\"quoted", `{"status":"ok","node":"n\"quoted"}`},
		{`{}`, "node-1", `{"node":"node-1"}`},
		{`{"status":"ok","node":"own"}`, "node-1", `{"status":"ok","node":"own"}`}, // a daemon's own "node" stands
		{`{"status":"ok"}`, "", `{"status":"ok"}`},                                 // no header: nothing to say
		{`not json`, "node-1", `not json`},
	} {
		got := string(withNode([]byte(c.in), c.node))
		assert.Equal(t, c.want, got, "%q + %q", c.in, c.node)
		if json.Valid([]byte(c.want)) {
			assert.True(t, json.Valid([]byte(got)), got)
		}
	}
}

// TestRunURLJSONNode: `agentjail run --url --json` prints the result with
// "node", the node that ran it (its Agentjail-Node), as the Python
// client's Result.node says it.
func TestRunURLJSONNode(t *testing.T) {
	systest.Require(t, systest.Root, systest.UserNS, systest.CgroupMem, systest.Python, systest.Seccomp)
	_, addr, pki, tokFile := remoteDaemon(t, t.TempDir(), "node = \"node-j\"\n")
	cmd := exec.Command("/proc/self/exe", "run", "--url", "https://"+addr, "--ca", pki.CA, "--token-file", tokFile, "--json", "-c", "print(6*7)")
	cmd.Env = append(os.Environ(), "AGENTJAIL_TEST_MAIN=1", "AGENTJAIL_SOCKET=", "AGENTJAIL_TOKEN=")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), errb.String())
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(out.String()), &res), out.String())
	assert.Equal(t, "node-j", res["node"], out.String())
	assert.Equal(t, "42\n", res["stdout"])
	assert.True(t, strings.HasSuffix(out.String(), "}\n"), "one line: %q", out.String())
}
