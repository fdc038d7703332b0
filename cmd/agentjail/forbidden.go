package main

import (
	"fmt"
	"strings"

	"agentjail/seccomp"
)

// maxForbiddenShown is how many forbidden system calls the summary line
// names; the others are counted.
const maxForbiddenShown = 3

// forbiddenSummary is the summary line's part for the forbidden system
// calls a run made (the result's seccomp): "forbidden: socket(AF_PACKET) ×2, sync",
// in the order of their first attempt, a count when above one; "" for
// none. In errno mode the program went on (the calls failed with EPERM),
// so without it a run that exits 0 would not show them at all.
func forbiddenSummary(r *seccomp.Report) string {
	if r == nil || len(r.Calls) == 0 {
		return ""
	}
	var parts []string
	for i, c := range r.Calls {
		if i == maxForbiddenShown {
			parts = append(parts, fmt.Sprintf("%d more", len(r.Calls)-i))
			break
		}
		name := c.Syscall
		switch {
		case c.ABI != "": // a call through another ABI: no x86_64 name
			name = fmt.Sprintf("%s #%d", c.ABI, c.Number)
		case name == "":
			name = fmt.Sprintf("#%d", c.Number)
		case c.Detail != "": // the arguments the filter refused it for
			name += "(" + c.Detail + ")"
		}
		if c.Count > 1 {
			name += fmt.Sprintf(" ×%d", c.Count)
		}
		parts = append(parts, name)
	}
	return "forbidden: " + strings.Join(parts, ", ")
}
