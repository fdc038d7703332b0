package nsjail

import (
	_ "embed"
	"slices"
)

// The zygote's program in two files: zygote.py (its imports, constants,
// messages, plans and its loop) and zygote_program.py (one warm run's
// program, from the fork on), shipped as one.
var (
	//go:embed zygote.py
	zygoteHead []byte
	//go:embed zygote_program.py
	zygoteTail []byte
)

// zygotePy is the zygote's program as it runs: zygote.py, then
// zygote_program.py.
var zygotePy = slices.Concat(zygoteHead, []byte("\n\n"), zygoteTail)
