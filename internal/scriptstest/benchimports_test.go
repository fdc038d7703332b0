package scriptstest

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	pyImport     = regexp.MustCompile(`(?m)^[ \t]*import[ \t]+([\w., \t]+)`)
	pyFromImport = regexp.MustCompile(`(?m)^[ \t]*from[ \t]+(\w+)[ \t]+import\b`)
)

// benchImports reads scripts/benchmarks/*.py: for each module, the other
// modules of that directory it imports (at the top or inside a function).
func benchImports(t *testing.T, dir string) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.py"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no Python modules in %s", dir)
	local := map[string]bool{}
	for _, f := range files {
		local[strings.TrimSuffix(filepath.Base(f), ".py")] = true
	}
	graph := map[string][]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		mod := strings.TrimSuffix(filepath.Base(f), ".py")
		seen := map[string]bool{}
		var names []string
		for _, m := range pyImport.FindAllStringSubmatch(string(b), -1) {
			for _, part := range strings.Split(m[1], ",") {
				if fields := strings.Fields(part); len(fields) > 0 {
					names = append(names, fields[0])
				}
			}
		}
		for _, m := range pyFromImport.FindAllStringSubmatch(string(b), -1) {
			names = append(names, m[1])
		}
		for _, n := range names {
			if local[n] && n != mod && !seen[n] {
				seen[n] = true
				graph[mod] = append(graph[mod], n)
			}
		}
		sort.Strings(graph[mod])
	}
	return graph
}

// importCycle is one circle of imports in graph (its modules, the first
// again at the end), or nil when the imports go one way.
func importCycle(graph map[string][]string) []string {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(string) []string
	visit = func(m string) []string {
		state[m] = open
		path = append(path, m)
		for _, d := range graph[m] {
			switch state[d] {
			case open:
				for i, p := range path {
					if p == d {
						return append(append([]string{}, path[i:]...), d)
					}
				}
			case unseen:
				if c := visit(d); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[m] = done
		return nil
	}
	mods := make([]string, 0, len(graph))
	for m := range graph {
		mods = append(mods, m)
	}
	sort.Strings(mods)
	for _, m := range mods {
		if state[m] == unseen {
			if c := visit(m); c != nil {
				return c
			}
		}
	}
	return nil
}

// The benchmark modules import one way: scripts/bench's entry (bench.py)
// → the runners (bench_*.py) → the helpers (benchlib.py, kernelcpu.py),
// which import none of the others. No module imports the entry.
func TestBenchImportsGoOneWay(t *testing.T) {
	graph := benchImports(t, filepath.Join(repo(t), "scripts", "benchmarks"))
	assert.Nil(t, importCycle(graph), "a circle of imports among scripts/benchmarks/*.py")
	for _, leaf := range []string{"benchlib", "kernelcpu"} {
		assert.Empty(t, graph[leaf], "%s.py is a helper: it must import no other benchmark module", leaf)
	}
	for m, deps := range graph {
		assert.NotContains(t, deps, "bench", "%s.py imports bench.py, the entry of scripts/bench: import benchlib or the runner instead", m)
	}
	assert.Contains(t, graph["bench"], "benchlib", "the import scan found nothing: has the layout changed?")
}

// The scan itself: a circle is found, a one-way graph passes.
func TestImportCycleFindsACircle(t *testing.T) {
	assert.Equal(t, []string{"a", "b", "c", "a"}, importCycle(map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"a"}}))
	assert.Nil(t, importCycle(map[string][]string{"a": {"b", "c"}, "b": {"c"}, "c": nil}))
}
