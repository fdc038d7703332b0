//go:build linux && !cgo

package nsjail

import (
	"testing"

	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

// A binary built without cgo has no bootstrap: it says so before it starts
// anything (scripts/test runs this with CGO_ENABLED=0).
func TestNewRunnerWithoutCgoSaysSo(t *testing.T) {
	systest.Require(t, systest.Root)
	_, err := NewRunner()
	require.ErrorIs(t, err, ErrBuiltWithoutCgo)
}
