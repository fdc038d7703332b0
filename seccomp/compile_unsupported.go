//go:build linux && !cgo

package seccomp

import "fmt"

// Compile needs libseccomp, which needs cgo: this binary was built with
// CGO_ENABLED=0. Rebuild with cgo and Debian's libseccomp-dev installed.
func (p *Policy) Compile() (*Program, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("seccomp: compiling the policy needs libseccomp, but this binary was built without cgo: %w", errUnsupported)
}
