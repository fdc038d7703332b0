package harness

import (
	"encoding/base64"

	"agentjail/nsjail"
)

// Display is one entry of the result's "display" (docs/contract.md §9):
// what a notebook would show. Data is base64 for an image, the text
// itself otherwise; Bytes is the size of what Data stands for (the
// decoded image, the text's UTF-8 bytes), counted by the daemon.
type Display struct {
	Mime  string `json:"mime"`
	Data  string `json:"data"`
	Bytes int64  `json:"bytes"`
}

// MaxDisplayEntries bounds the entries of one result, whatever its
// display_bytes; the harness sends no more (harness_lib.py MAX_DISPLAY_N).
const MaxDisplayEntries = 32

// displayMimes are the kinds of entry the harness sends, and whether
// their data is base64. A record of any other kind is ignored.
var displayMimes = map[string]bool{"image/png": true, "text/html": false, "text/markdown": false}

// addDisplay takes a display record. The bytes come from the jail: they
// are counted, and for an image checked to be base64, never read further.
// Past MaxDisplayEntries or nsjail.MaxDisplayBytes in all, or when the
// harness sent only an entry's size (it was past its own bounds), the
// entry is dropped and the report says so.
func (r *Report) addDisplay(rec *record, err error) {
	binary, known := displayMimes[rec.Mime]
	if err != nil || !known {
		return
	}
	if rec.Data == nil {
		r.displayDropped = true
		return
	}
	n := int64(len(*rec.Data))
	if binary {
		b, derr := base64.StdEncoding.DecodeString(*rec.Data)
		if derr != nil {
			return
		}
		n = int64(len(b))
	}
	if len(r.display) >= MaxDisplayEntries || r.displayBytes+n > nsjail.MaxDisplayBytes {
		r.displayDropped = true
		return
	}
	r.displayBytes += n
	r.display = append(r.display, Display{Mime: rec.Mime, Data: *rec.Data, Bytes: n})
}

// Display is the result's "display" for a display_bytes limit of limit
// bytes, and whether entries were dropped (the harness's, the report's
// or this limit's): the entries in order up to the first that does not
// fit. A limit of 0 is the default one. Never nil.
func (r *Report) Display(limit int64) (entries []Display, truncated bool) {
	entries = []Display{}
	if r == nil {
		return entries, false
	}
	if limit <= 0 {
		limit = nsjail.DefaultLimits().DisplayBytes
	}
	var total int64
	for i, d := range r.display {
		if total+d.Bytes > limit {
			return entries, true
		}
		total += d.Bytes
		entries = append(entries, r.display[i])
	}
	return entries, r.displayDropped
}
