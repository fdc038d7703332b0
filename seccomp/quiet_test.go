package seccomp

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Each quiet probe is in docs/security.md's table with its answer, and
// each of its Errno rules gives that answer in the policy.
func TestQuietProbesAreDocumentedAndAnswered(t *testing.T) {
	doc, err := os.ReadFile("../docs/security.md")
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(doc), "## Probes answered quietly")
	require.True(t, ok, "docs/security.md has no section \"Probes answered quietly\"")
	p := DefaultPolicy()
	for _, q := range QuietProbes() {
		row := "| `" + q.Syscall + "` |"
		i := strings.Index(table, row)
		if assert.GreaterOrEqual(t, i, 0, "no row for %s", q.Syscall) {
			line, _, _ := strings.Cut(table[i:], "\n")
			name := unix.ErrnoName(q.Errno)
			if q.Errno == unix.EOPNOTSUPP {
				name = "EOPNOTSUPP" // the same number as ENOTSUP, ErrnoName's choice
			}
			assert.Contains(t, line, "`"+name+"`", "%s's row names another answer", q.Syscall)
		}
		nr, _ := syscallNumber(q.Syscall)
		answered := false
		for _, r := range q.rules {
			if r.Action != Errno {
				continue
			}
			var args [6]uint64
			for _, c := range r.When {
				args[c.Arg] = c.Value
			}
			assert.Equal(t, retErrno|uint32(q.Errno), p.decide(nr, args), "%s %v", q.Syscall, r.When)
			answered = true
		}
		assert.True(t, answered, "%s has no Errno rule", q.Syscall)
	}
}
