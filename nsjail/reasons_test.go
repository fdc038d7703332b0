package nsjail

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// constantsOf are the names of the package's constants declared with
// type typ, read from its source (a new constant is found wherever it is
// declared).
func constantsOf(t *testing.T, typ string) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var names []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		for _, d := range af.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, sp := range g.Specs {
				vs := sp.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); ok && id.Name == typ {
					for _, n := range vs.Names {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	require.NotEmpty(t, names, typ)
	return names
}

// Every EndReason constant is a row of endReasons, once, with the kill
// reason of a call it ends.
func TestEveryEndReasonIsInTheTable(t *testing.T) {
	byValue := map[EndReason]string{}
	for _, n := range constantsOf(t, "EndReason") {
		byValue[endReasonByName[n]] = n
		_, ok := endReasonByName[n]
		assert.True(t, ok, "%s: add it to endReasonByName and to endReasons", n)
	}
	seen := map[EndReason]bool{}
	for _, r := range endReasons {
		assert.False(t, seen[r.end], "%s twice", r.end)
		seen[r.end] = true
		assert.NotEmpty(t, r.kill, r.end)
	}
	for v, n := range byValue {
		assert.True(t, seen[v], "%s (%q) is not in endReasons", n, v)
	}
	assert.Equal(t, len(byValue), len(endReasons))
}

// Every KillReason constant but KillNone is in KillReasons, once.
func TestEveryKillReasonIsListed(t *testing.T) {
	listed := map[KillReason]bool{}
	for _, k := range KillReasons() {
		assert.False(t, listed[k], "%s twice", k)
		listed[k] = true
	}
	names := constantsOf(t, "KillReason")
	for _, n := range names {
		k, ok := killReasonByName[n]
		require.True(t, ok, "%s: add it to killReasonByName and KillReasons", n)
		assert.Equal(t, k != KillNone, listed[k], n)
	}
	assert.Equal(t, len(names)-1, len(KillReasons()))
}

// The constants by name, for the tests above: a constant missing here
// fails them.
var (
	endReasonByName = map[string]EndReason{"EndExited": EndExited, "EndDeleted": EndDeleted, "EndIdle": EndIdle,
		"EndLifetime": EndLifetime, "EndShutdown": EndShutdown, "EndMemory": EndMemory, "EndCPU": EndCPU, "EndWall": EndWall,
		"EndOutput": EndOutput, "EndCancelled": EndCancelled, "EndSeccomp": EndSeccomp, "EndFileSize": EndFileSize,
		"EndControlLost": EndControlLost, "EndProtocol": EndProtocol, "EndRuntime": EndRuntime}
	killReasonByName = map[string]KillReason{"KillNone": KillNone, "KillMemoryLimit": KillMemoryLimit,
		"KillWallTimeout": KillWallTimeout, "KillCPUTimeout": KillCPUTimeout, "KillOutputLimit": KillOutputLimit,
		"KillSeccomp": KillSeccomp, "KillFileSizeLimit": KillFileSizeLimit, "KillCancelled": KillCancelled,
		"KillShutdown": KillShutdown, "KillControlLost": KillControlLost}
)
