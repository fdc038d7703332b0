package nsjail

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/internal/systest"
)

// The libraries agents use most work in a jail: numpy (through Debian's
// BLAS, whose libraries are links through /etc/alternatives), pandas and
// matplotlib (whose configuration Debian keeps in /etc). HostEtc gives
// the jail what of the host's /etc they resolve through.

// scienceSpec is a spec of the default runtime with the host's /etc
// entries it needs.
func scienceSpec(t *testing.T, code string, mod func(*Spec)) *Spec {
	t.Helper()
	systest.Require(t, systest.Scientific)
	s := &Spec{Program: []byte(code), Limits: DefaultLimits(), Etc: testEtc()}
	// The default limits but time: importing the stack takes seconds of
	// CPU under emulation (the VM suite's TCG).
	s.Limits.WallTime, s.Limits.CPUTime = 2*time.Minute, 2*time.Minute
	if mod != nil {
		mod(s)
	}
	return s
}

func TestHostEtcHasWhatTheRuntimeResolvesThrough(t *testing.T) {
	systest.Require(t, systest.Scientific)
	etc, err := HostEtc(nil)
	require.NoError(t, err)
	paths := map[string]EtcEntry{}
	for _, e := range etc.Entries {
		paths[e.Path] = e
	}
	assert.Contains(t, paths, "alternatives/libblas.so.3-x86_64-linux-gnu", "numpy's BLAS")
	assert.Contains(t, paths, "matplotlibrc")
	assert.Contains(t, paths, "fonts/fonts.conf")
	for p, e := range paths {
		assert.False(t, strings.HasPrefix(p, "alternatives/") && !strings.HasPrefix(e.Link, "/usr/"), "%s -> %s: outside the jail's binds", p, e.Link)
	}
	// Only what a library in /usr links through: not every alternative
	// the host has (a man page's, a program outside the runtime's).
	assert.NotContains(t, paths, "alternatives/pager.1.gz")
}

func TestNumpyPandasMatplotlibWork(t *testing.T) {
	res := runIn(t, testRunner(t), scienceSpec(t, `import os, numpy, pandas, matplotlib
import matplotlib.pyplot as plt
a = numpy.arange(12.0).reshape(3, 4)
print(int((a @ a.T).trace()))
df = pandas.read_csv("data.csv")
print(df["b"].sum(), len(df))
plt.plot(df["a"], df["b"]); plt.savefig("/workspace/chart.png")
print(matplotlib.get_backend(), open("/proc/self/status").read().count("Threads:\t1\n"))
`, func(s *Spec) {
		s.Files = []File{{Path: "data.csv", Content: []byte("a,b\n1,2\n3,4\n5,6\n")}}
		s.Collect = []string{"chart.png"}
		s.CollectLimits = DefaultCollectLimits()
	}))
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	assert.Equal(t, "506\n12 3\nagg 1\n", string(res.Stdout), "the BLAS thread pool is the jail's one CPU")
	assert.Empty(t, string(res.Stderr), "no warning: matplotlib's config and cache are writable")
	assert.Nil(t, res.Seccomp, "no forbidden call made by a library")
	require.Len(t, res.Files, 1)
	png := res.Files[0].Content
	require.True(t, bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")), "a PNG")
	w, h := binary.BigEndian.Uint32(png[16:20]), binary.BigEndian.Uint32(png[20:24])
	assert.Equal(t, [2]uint32{640, 480}, [2]uint32{w, h}, "matplotlib's default figure size")
}

func TestNumpyPastTheMemoryLimit(t *testing.T) {
	res := runIn(t, testRunner(t), scienceSpec(t, `import numpy
x = numpy.ones((300 << 20) // 8)
print("survived")`, func(s *Spec) { s.Limits.MemoryBytes = 128 << 20 }))
	assert.Equal(t, StatusKilled, res.Status)
	assert.Equal(t, KillMemoryLimit, res.KillReason)
	assert.NotContains(t, string(res.Stdout), "survived")
}

// A library's thread pool stays within a small pids limit: the BLAS and
// OpenMP pools are as large as the jail's CPU bandwidth.
func TestNumpyUnderASmallPidsLimit(t *testing.T) {
	res := runIn(t, testRunner(t), scienceSpec(t, `import numpy, threading
a = numpy.random.default_rng(1).random((300, 300))
print(round(float((a @ a).sum())) > 0, threading.active_count())`, func(s *Spec) { s.Limits.Pids = 16 }))
	require.Equal(t, StatusOK, res.Status, string(res.Stderr))
	assert.Equal(t, "True 1\n", string(res.Stdout))
	assert.Zero(t, res.PidsMaxHits)
}
