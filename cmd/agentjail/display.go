package main

import (
	"fmt"
	"io"

	"agentjail/daemon"
	"agentjail/daemon/harness"
)

// displayExt is the file name extension of a display entry's kind.
var displayExt = map[string]string{"image/png": "png", "text/html": "html", "text/markdown": "md"}

// displayFiles are the result's display entries as files that
// --collect-dir writes beside the collected ones: display-1.png,
// display-2.html, ... (N: the entry's place in the display, from 1). An
// image's data is base64; the rest is text.
func displayFiles(r *daemon.Result) []daemon.ResultFile {
	var out []daemon.ResultFile
	for i, d := range r.Display {
		ext, ok := displayExt[d.Mime]
		if !ok {
			ext = "bin"
		}
		enc := "utf-8"
		if d.Mime == "image/png" {
			enc = "base64"
		}
		data := d.Data
		out = append(out, daemon.ResultFile{Path: fmt.Sprintf("display-%d.%s", i+1, ext), Size: d.Bytes, Encoding: enc, Content: &data})
	}
	return out
}

// writeOutputs writes the collected files, then the display entries,
// below dir; a write's index past the files is a display entry's.
func writeOutputs(dir string, r *daemon.Result, overwrite bool) []collectWrite {
	return writeCollected(dir, append(append([]daemon.ResultFile{}, r.Files...), displayFiles(r)...), overwrite)
}

// printDisplay says, for people, what the display held and where
// --collect-dir wrote it.
func printDisplay(w io.Writer, r *daemon.Result, writes []collectWrite) {
	written := map[int]collectWrite{}
	for _, cw := range writes {
		written[cw.index-len(r.Files)] = cw
	}
	for i, d := range r.Display {
		cw, wrote := written[i]
		what := fmt.Sprintf("agentjail: display %d: %s (%s)", i+1, d.Mime, harness.Bytes(d.Bytes))
		switch {
		case wrote && cw.err != nil:
			fmt.Fprintf(w, "%s, not written: %v\n", what, cw.err)
		case wrote:
			fmt.Fprintf(w, "%s → %s\n", what, shownText(cw.dest))
		default:
			fmt.Fprintf(w, "%s; --collect-dir DIR writes it, --json returns it\n", what)
		}
	}
	if r.DisplayTruncated {
		fmt.Fprintln(w, "agentjail: display cut: more figures or rich output than limits.display_bytes (--display-bytes) allows")
	}
}
