//go:build linux && cgo && !agentjail_nolibseccomp

package seccomp

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEmbeddedProgramIsCurrent(t *testing.T) {
	p, err := DefaultPolicy().Compile()
	require.NoError(t, err)
	b, err := p.MarshalBinary()
	require.NoError(t, err)
	if *update {
		require.NoError(t, os.WriteFile("default.bpf", b, 0o644))
		return
	}
	require.True(t, bytes.Equal(b, defaultBPF),
		"default.bpf is stale: the policy changed; run go test ./seccomp -run TestEmbeddedProgramIsCurrent -update and review the golden decisions")
	emb, err := DefaultProgram()
	require.NoError(t, err)
	require.Equal(t, p.Instructions, emb.Instructions)
}
