package nsjail

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each case of the catalogue has a program (testdata/attacks/<id>.py, or
// its own code) or runs its own jobs; each file there is a case's.
func TestAttackProgramsAreFilesOfTheirCases(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "attacks", "*.py"))
	require.NoError(t, err)
	unused := map[string]bool{}
	for _, f := range files {
		unused[strings.TrimSuffix(filepath.Base(f), ".py")] = true
	}
	for _, a := range attackCases() {
		_, err := os.Stat(filepath.Join("testdata", "attacks", a.id+".py"))
		has := err == nil
		assert.False(t, has && a.code != "", "%s: a file and code of its own", a.id)
		assert.True(t, has || a.code != "" || a.run != nil, "%s: no program", a.id)
		delete(unused, a.id)
	}
	assert.Empty(t, unused, "files of no case")
}
