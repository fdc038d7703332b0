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

func TestEmbeddedZygoteProgramIsCurrent(t *testing.T) {
	p, err := ZygotePolicy().Compile()
	require.NoError(t, err)
	b, err := p.MarshalBinary()
	require.NoError(t, err)
	if *update {
		require.NoError(t, os.WriteFile("zygote.bpf", b, 0o644))
		return
	}
	require.True(t, bytes.Equal(b, zygoteBPF),
		"zygote.bpf is stale: the policy changed; run go test ./seccomp -run TestEmbeddedZygoteProgramIsCurrent -update")
}

// The zygote's filter forbids what the default one does, but for the
// calls that forking a program into a run's namespaces needs; every call it allows, the
// default allows too or is one of those (so the run's filter, stacked on
// it, decides for the program alone).
func TestZygotePolicyOpensOnlyWhatForkingARunNeeds(t *testing.T) {
	z, d := ZygotePolicy(), DefaultPolicy()
	require.NoError(t, z.Validate())
	opened := map[string]bool{}
	for nr := 0; nr <= d.KnownThrough; nr++ {
		for _, args := range [][6]uint64{{}, {0x10000000}, {0x20000, 1, 2, 3, 4, 5}} {
			zd, dd := z.decide(nr, args), d.decide(nr, args)
			if zd != dd {
				require.Equal(t, uint32(retAllow), zd, "%s: the zygote's filter may only allow more", SyscallName(nr))
				opened[SyscallName(nr)] = true
			}
		}
	}
	require.Equal(t, map[string]bool{"setns": true, "unshare": true, "seccomp": true}, opened)
}
