//go:build linux && (!cgo || agentjail_nolibseccomp)

package seccomp

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCompileWithoutCgoSaysSo(t *testing.T) {
	_, err := DefaultPolicy().Compile()
	require.Error(t, err)
	require.True(t, IsUnsupported(err), "%v", err)
	require.ErrorContains(t, err, "built without it")
}
