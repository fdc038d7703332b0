//go:build linux && cgo

package nsjail

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPlanSeeds checks that the decoder takes every real plan; with
// AGENTJAIL_PLAN_SEEDS=DIR it also writes the seeds of FuzzPlanDryPass
// there, with its corpus (testdata/fuzz and what "go test -fuzz" found, in
// GOCACHE), for the sanitized C harness (plan_fuzz_asan in scripts/ci/checks). Each
// file is one byte, the message's fds, then the plan.
func TestPlanSeeds(t *testing.T) {
	seeds := planSeeds(t)
	dir := os.Getenv("AGENTJAIL_PLAN_SEEDS")
	if dir == "" {
		return
	}
	corpora := []string{filepath.Join("testdata", "fuzz", "FuzzPlanDryPass")}
	if cache := os.Getenv("GOCACHE"); cache != "" {
		corpora = append(corpora, filepath.Join(cache, "fuzz", "agentjail", "nsjail", "FuzzPlanDryPass"))
	}
	for _, c := range corpora {
		entries, _ := os.ReadDir(c) // a corpus not there yet has no seeds
		for _, e := range entries {
			s, err := readPlanCorpusFile(filepath.Join(c, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			seeds = append(seeds, s)
		}
	}
	for i, s := range seeds {
		b := append([]byte{byte(s.nfds % (maxMsgFds + 1))}, s.plan...)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%04d", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d seeds written to %s", len(seeds), dir)
}

// readPlanCorpusFile reads one entry of FuzzPlanDryPass's corpus ("go test
// fuzz v1", then a []byte(...) and an int(...) line).
func readPlanCorpusFile(path string) (planSeed, error) {
	f, err := os.Open(path)
	if err != nil {
		return planSeed{}, err
	}
	defer f.Close()
	var s planSeed
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for n := 0; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case n == 0 && line == "go test fuzz v1":
		case strings.HasPrefix(line, "[]byte(") && strings.HasSuffix(line, ")"):
			q, err := strconv.Unquote(line[len("[]byte(") : len(line)-1])
			if err != nil {
				return s, fmt.Errorf("%s: line %d: %v", path, n+1, err)
			}
			s.plan = []byte(q)
		case strings.HasPrefix(line, "int(") && strings.HasSuffix(line, ")"):
			v, err := strconv.Atoi(line[len("int(") : len(line)-1])
			if err != nil {
				return s, fmt.Errorf("%s: line %d: %v", path, n+1, err)
			}
			if v < 0 {
				v = -v
			}
			s.nfds = v
		default:
			return s, fmt.Errorf("%s: line %d: not a FuzzPlanDryPass entry: %.40q", path, n+1, line)
		}
	}
	return s, sc.Err()
}
