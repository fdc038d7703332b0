package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"agentjail/daemon"
	"agentjail/daemon/harness"
	"agentjail/internal/systest"
)

// --collect-dir writes the display entries as display-N files beside the
// collected ones: an image's decoded bytes, the text of the others.
func TestCollectDirWritesDisplay(t *testing.T) {
	png := "\x89PNG\r\n\x1a\nnot really"
	content := "a,b\n"
	r := &daemon.Result{
		Files: []daemon.ResultFile{{Path: "out/data.csv", Size: 4, Encoding: "utf-8", Content: &content}},
		Display: []harness.Display{{Mime: "image/png", Data: base64.StdEncoding.EncodeToString([]byte(png)), Bytes: int64(len(png))},
			{Mime: "text/html", Data: "<table></table>", Bytes: 15}},
		DisplayTruncated: true,
	}
	dir := filepath.Join(t.TempDir(), "d")
	writes := writeOutputs(dir, r, false)
	require.Len(t, writes, 3)
	for _, w := range writes {
		require.NoError(t, w.err)
	}
	for name, want := range map[string]string{"out/data.csv": content, "display-1.png": png, "display-2.html": "<table></table>"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err, name)
		assert.Equal(t, want, string(b), name)
	}
	var out strings.Builder
	printDisplay(&out, r, writes)
	assert.Equal(t, "agentjail: display 1: image/png (18 B) → "+filepath.Join(dir, "display-1.png")+"\n"+
		"agentjail: display 2: text/html (15 B) → "+filepath.Join(dir, "display-2.html")+"\n"+
		"agentjail: display cut: more figures or rich output than limits.display_bytes (--display-bytes) allows\n", out.String())

	// Written again without --overwrite: each is refused, none replaced.
	writes = writeOutputs(dir, r, false)
	for _, w := range writes {
		assert.ErrorContains(t, w.err, "it exists")
	}
}

// --collect-dir without --collect writes the figures a program showed,
// and says so when it showed none (issue 34: the CLI's --collect-dir
// writes display images as files too).
func TestCollectDirAloneWritesFigures(t *testing.T) {
	jailHost(t)
	systest.Require(t, systest.Scientific)
	dir := filepath.Join(t.TempDir(), "figs")
	code, _, stderr := bin(t, "", "run", "--timeout", "2m", "--cpu-time", "2m", "--collect-dir", dir, "-c",
		"import matplotlib.pyplot as plt\nplt.figure(figsize=(2, 1), dpi=100)\nplt.plot([1, 2])\nplt.show()")
	require.Equal(t, 0, code, stderr)
	b, err := os.ReadFile(filepath.Join(dir, "display-1.png"))
	require.NoError(t, err, stderr)
	assert.Equal(t, "\x89PNG", string(b[:4]))

	code, _, stderr = bin(t, "", "run", "--collect-dir", filepath.Join(t.TempDir(), "none"), "-c", "pass")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "--collect-dir: nothing written: the program showed no figure")
}
