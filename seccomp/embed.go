package seccomp

import (
	_ "embed"
	"fmt"
	"sync"
)

// defaultBPF is DefaultPolicy compiled by libseccomp, as MarshalBinary
// writes it. Shipping the compiled program keeps libseccomp out of the
// agentjail binary (scripts/build's agentjail_nolibseccomp tag: it starts
// twice per run, and libseccomp's initialisation probes the kernel), while
// the policy stays data: TestEmbeddedProgramIsCurrent compiles the policy
// again and fails if this file is stale; `go test ./seccomp -run
// TestEmbeddedProgramIsCurrent -update` regenerates it.
//
//go:embed default.bpf
var defaultBPF []byte

var embeddedProgram = sync.OnceValues(func() (*Program, error) {
	p := new(Program)
	if err := p.UnmarshalBinary(defaultBPF); err != nil {
		return nil, fmt.Errorf("seccomp: embedded default program: %w", err)
	}
	return p, nil
})

// DefaultProgram is the compiled DefaultPolicy.
func DefaultProgram() (*Program, error) { return embeddedProgram() }

// DefaultProgramBytes is DefaultProgram as MarshalBinary encodes it, which is
// how it travels to a jail's init stage.
func DefaultProgramBytes() []byte { return defaultBPF }

// zygoteBPF is ZygotePolicy compiled, as defaultBPF is DefaultPolicy.
//
//go:embed zygote.bpf
var zygoteBPF []byte

// ZygoteProgramBytes is the compiled ZygotePolicy, as MarshalBinary
// encodes it: the filter of a zygote's init stage.
func ZygoteProgramBytes() []byte { return zygoteBPF }
